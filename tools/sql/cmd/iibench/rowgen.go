// rowgen.go makes the rows iibench inserts: a DATETIME(6) stepped by one
// microsecond per row of a batch, four random integers, and the char
// fields, each length_char_fields long, of which percent_compressible
// percent is one constant character and the rest random a-z.
package main

import (
	"math/rand/v2"
	"strings"
	"time"
)

// Value ranges of the integer columns (uniform).
const (
	cashRegisters = 1000
	customers     = 100000
	products      = 10000
	prices        = 500
)

// compressChar fills the compressible share of every char field.
const compressChar = 'a'

// RowGen fills insert arguments; one per goroutine (not thread-safe).
type RowGen struct {
	rng       *rand.Rand
	fields    int
	length    int
	randomLen int    // random a-z bytes at the start of each field
	constTail string // the compressible tail
	buf       []byte
}

// NewRowGen makes a generator for the task's row shape.
func NewRowGen(seed uint64, fields, length, percentCompressible int) *RowGen {
	c := length * percentCompressible / 100
	return &RowGen{
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		fields:    fields,
		length:    length,
		randomLen: length - c,
		constTail: strings.Repeat(string(rune(compressChar)), c),
		buf:       make([]byte, length),
	}
}

// Columns is the number of inserted columns per row.
func (g *RowGen) Columns() int { return 5 + g.fields }

// CharField returns one char field's value.
func (g *RowGen) CharField() string {
	b := g.buf[:g.randomLen]
	for i := range b {
		b[i] = 'a' + byte(g.rng.Uint32N(26))
	}
	return string(b) + g.constTail
}

// Fill writes n rows into args (len >= n*Columns()): the rows'
// dateandtime values are base, base+1us, ..., so each row of a batch has
// its own time and the pdc index sees real cardinality.
func (g *RowGen) Fill(args []any, n int, base time.Time) {
	k := 0
	for i := 0; i < n; i++ {
		args[k] = base.Add(time.Duration(i) * time.Microsecond)
		args[k+1] = int32(g.rng.IntN(cashRegisters))
		args[k+2] = int32(g.rng.IntN(customers))
		args[k+3] = int32(g.rng.IntN(products))
		args[k+4] = int32(g.rng.IntN(prices))
		k += 5
		for f := 0; f < g.fields; f++ {
			args[k] = g.CharField()
			k++
		}
	}
}

// Intn returns a uniform int in [0, n) from the generator's stream.
func (g *RowGen) Intn(n int) int { return g.rng.IntN(n) }
