// rowgen_test.go checks the generated rows: field lengths, the
// compressible share, the microsecond steps and the SQL built around them.
package main

import (
	"strings"
	"testing"
	"time"
)

func TestCharFieldsHaveTheCompressibleShare(t *testing.T) {
	for _, c := range []struct{ length, pct, constant int }{{100, 30, 30}, {100, 0, 0}, {100, 100, 100}, {7, 50, 3}, {1, 30, 0}} {
		g := NewRowGen(1, 4, c.length, c.pct)
		distinct := map[string]bool{}
		for i := 0; i < 200; i++ {
			f := g.CharField()
			if len(f) != c.length {
				t.Fatalf("length %d, want %d", len(f), c.length)
			}
			if tail := f[c.length-c.constant:]; tail != strings.Repeat("a", c.constant) {
				t.Fatalf("%d%% of %d: tail %q is not %d constant bytes", c.pct, c.length, tail, c.constant)
			}
			for _, b := range []byte(f) {
				if b < 'a' || b > 'z' {
					t.Fatalf("byte %q outside a-z in %q", b, f)
				}
			}
			distinct[f[:c.length-c.constant]] = true
		}
		if c.length-c.constant >= 5 && len(distinct) < 190 {
			t.Errorf("%d%% of %d: only %d distinct random parts in 200", c.pct, c.length, len(distinct))
		}
	}
	// the random part uses the whole alphabet
	g := NewRowGen(2, 1, 100, 0)
	seen := map[byte]bool{}
	for i := 0; i < 50; i++ {
		for _, b := range []byte(g.CharField()) {
			seen[b] = true
		}
	}
	if len(seen) != 26 {
		t.Errorf("%d letters used, want 26", len(seen))
	}
}

func TestFillStepsTimeByMicrosecond(t *testing.T) {
	g := NewRowGen(3, 2, 10, 30)
	n := 50
	args := make([]any, n*g.Columns())
	base := time.Date(2026, 5, 18, 12, 0, 0, 0, time.UTC)
	g.Fill(args, n, base)
	for i := 0; i < n; i++ {
		row := args[i*7 : (i+1)*7]
		if ts := row[0].(time.Time); !ts.Equal(base.Add(time.Duration(i) * time.Microsecond)) {
			t.Fatalf("row %d time %v", i, ts)
		}
		for k, lim := range []int32{cashRegisters, customers, products, prices} {
			if v := row[1+k].(int32); v < 0 || v >= lim {
				t.Fatalf("row %d column %d value %d outside [0,%d)", i, k+1, v, lim)
			}
		}
		if s := row[5].(string); len(s) != 10 || !strings.HasSuffix(s, "aaa") {
			t.Fatalf("row %d char field %q", i, s)
		}
	}
}

func TestSQLShapes(t *testing.T) {
	task := Task{Table: "p", NumCharFields: 2, LengthCharFields: 50, NumSecondaryIndexes: 2, TableOptions: "ENGINE=TidesDB"}
	ddl := CreateTableSQL(task)
	for _, want := range []string{"transactionid INT NOT NULL AUTO_INCREMENT", "dateandtime DATETIME(6)", "char_field_2 VARCHAR(50)",
		"KEY marketsegment (price, customerid)", "KEY registersegment (cashregisterid, price, customerid)", ") ENGINE=TidesDB"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL lacks %q:\n%s", want, ddl)
		}
	}
	if strings.Contains(ddl, "pdc") || strings.Contains(ddl, "char_field_3") {
		t.Errorf("DDL has too much:\n%s", ddl)
	}
	ins := InsertSQL("p", 2, 3)
	if strings.Count(ins, "?") != 21 || strings.Count(ins, "(?,?,?,?,?,?,?)") != 3 {
		t.Errorf("insert: %s", ins)
	}
	if got := QueryTypes(2); len(got) != 3 || got[0] != QueryPK {
		t.Errorf("2 indexes serve %v", got)
	}
	if got := QueryTypes(3); len(got) != 4 {
		t.Errorf("3 indexes serve %v", got)
	}
	g := NewRowGen(4, 0, 1, 0)
	from := time.Now().Add(-time.Minute)
	for _, k := range QueryTypes(3) {
		q := QuerySQL("p", k, 10)
		if strings.Count(q, "?") != len(QueryArgs(g, k, 1000, from, time.Now())) || !strings.HasSuffix(q, "LIMIT 10") {
			t.Errorf("%s: placeholders and args differ or no LIMIT: %s", queryNames[k], q)
		}
		if k != QueryPK && !strings.Contains(q, "FORCE INDEX ("+queryNames[k]+")") {
			t.Errorf("%s does not force its index: %s", queryNames[k], q)
		}
	}
	for i := 0; i < 100; i++ {
		a := QueryArgs(g, QueryPDC, 5, from, time.Now())
		if ts := a[2].(time.Time); ts.Nanosecond()%1000 != 0 || ts.Before(from.Truncate(time.Microsecond)) || ts.After(time.Now()) {
			t.Fatalf("pdc start time %v: not whole microseconds or outside the span", ts)
		}
	}
	for i := 0; i < 1000; i++ {
		id := QueryArgs(g, QueryPK, 5, from, time.Now())[0].(int64)
		if id < 1 || id > 5 {
			t.Fatalf("pk start %d outside 1..5", id)
		}
	}
}
