// Package benchkeys is tdb_bench's key, value and random-number scheme
// (tools/bench/bench_keys.c) in Go, shared by the binding's benchmark
// programs so their runs use the same keys and values as tdb_bench's.
package benchkeys

import (
	"encoding/binary"
	"math/bits"
)

// Rng is tdb_bench's xoshiro256** seeded by splitmix64.
type Rng struct{ s [4]uint64 }

// NewRng seeds a generator as tdb_bench does.
func NewRng(seed uint64) *Rng {
	r := &Rng{}
	for i := range r.s {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		r.s[i] = z ^ (z >> 31)
	}
	return r
}

// Next is the next 64-bit output.
func (r *Rng) Next() uint64 {
	s := &r.s
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// Uniform is a number in [0, n) (Lemire's multiply-high).
func (r *Rng) Uniform(n uint64) uint64 {
	hi, _ := bits.Mul64(r.Next(), n)
	return hi
}

// KeyEncode writes tdb_bench's key i into buf: 8 big-endian bytes, then
// '0' padding.
func KeyEncode(buf []byte, i uint64) {
	binary.BigEndian.PutUint64(buf, i)
	for j := 8; j < len(buf); j++ {
		buf[j] = '0'
	}
}

// ValuePool is tdb_bench's value pool: 100-byte chunks of 50 random
// printable bytes, each followed by a copy of itself (compresses about
// 2:1); values are windows into it.
func ValuePool(valueSize int, seed uint64) []byte {
	size := 1 << 20
	for size < 4*valueSize {
		size *= 2
	}
	p := make([]byte, size)
	r := NewRng(seed ^ 0x76616c7565)
	for off := 0; off < size; off += 100 {
		chunk := min(size-off, 100)
		half := (chunk + 1) / 2
		for i := 0; i < half; i++ {
			p[off+i] = byte(' ' + r.Uniform(95))
		}
		copy(p[off+half:off+chunk], p[off:off+chunk-half])
	}
	return p
}
