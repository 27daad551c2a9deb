// stats_test.go checks the interval recorder, the TSV and .errcodes
// rows, reading a TSV back, and the summary built from intervals.
package main

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestRecorderCutsIntervals(t *testing.T) {
	t0 := time.Unix(100, 0)
	r := NewRecorder(t0)
	for i := 1; i <= 100; i++ {
		r.Insert(1000, time.Duration(i)*time.Millisecond) // 1..100 ms
	}
	r.Query("pk", 2*time.Millisecond)
	r.Query("pdc", 4*time.Millisecond)
	r.Query("pdc", 8*time.Millisecond)
	dup := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}
	r.Error("insert", dup)
	r.Error("insert", dup)
	r.Error("query", errors.New("connection reset"))
	tally := ErrTally{}
	s1 := r.Cut(t0.Add(10 * time.Second))
	iv := s1.Interval(t0)
	ec := tally.Rows(s1, iv.Elapsed)
	if iv.Rows != 100000 || iv.RowsPerS != 10000 || iv.Batches != 100 || iv.Queries != 3 || iv.QueriesPerS != 0.3 || iv.Errors != 3 {
		t.Fatalf("interval counts: %+v", iv)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.01 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("insert p50", iv.InsP50, 50)
	near("insert p95", iv.InsP95, 95)
	near("insert p99", iv.InsP99, 99)
	near("insert max", iv.InsMax, 100)
	near("query p99", iv.QP99, 8)
	bt := r.ByType()
	if len(bt) != 2 || bt[0].Kind != "pk" || bt[0].Count != 1 || bt[1].Kind != "pdc" || bt[1].Count != 2 {
		t.Fatalf("by type %+v", bt)
	}
	near("pdc p50", bt[1].P50, 4)
	near("pdc max", bt[1].Max, 8)
	if len(ec) != 2 || ec[0] != (ErrCount{Elapsed: 10, Kind: "insert", Code: 1062, Int: 2, Cum: 2}) ||
		ec[1] != (ErrCount{Elapsed: 10, Kind: "query", Code: 0, Int: 1, Cum: 1}) {
		t.Fatalf("error rows %+v", ec)
	}

	// the next interval starts empty; cumulative counts carry on
	r.Insert(500, 3*time.Millisecond)
	r.Error("insert", dup)
	s2 := r.Cut(t0.Add(15 * time.Second))
	iv2 := s2.Interval(t0)
	ec2 := tally.Rows(s2, iv2.Elapsed)
	if iv2.Rows != 100500 || iv2.RowsPerS != 100 || iv2.Batches != 1 || iv2.Queries != 0 || !math.IsNaN(iv2.QP50) || iv2.Errors != 1 {
		t.Fatalf("second interval: %+v", iv2)
	}
	near("second insert max", iv2.InsMax, 3)
	if len(ec2) != 1 || ec2[0].Int != 1 || ec2[0].Cum != 3 {
		t.Fatalf("second error rows %+v", ec2)
	}
	s3 := r.Cut(t0.Add(20 * time.Second))
	if iv3 := s3.Interval(t0); !s3.Empty() || !math.IsNaN(iv3.InsP99) || iv3.RowsPerS != 0 || iv3.Rows != 100500 {
		t.Errorf("empty interval: %+v", iv3)
	}

	// a short tail merged into the interval before it: one row over both
	r.Insert(100, 200*time.Millisecond)
	tail := r.Cut(t0.Add(20*time.Second + 500*time.Millisecond))
	s2.Merge(s3)
	s2.Merge(tail)
	m := s2.Interval(t0)
	if m.Elapsed != 20.5 || m.Rows != 100600 || m.Batches != 2 || m.Errors != 1 || math.Abs(m.RowsPerS-600/10.5) > 1e-9 {
		t.Errorf("merged interval %+v", m)
	}
	near("merged insert max", m.InsMax, 200)
	near("merged insert p50", m.InsP50, 3)

	// TSV rows read back as written
	var b bytes.Buffer
	WriteTSVRow(&b, TSVHeader)
	WriteTSVRow(&b, iv.Fields())
	WriteTSVRow(&b, iv2.Fields())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[0] != "elapsed_s\trows\trows_per_s\tinsert_p50_ms\tinsert_p95_ms\tinsert_p99_ms\tinsert_max_ms\tqueries_per_s\tquery_p50_ms\tquery_p95_ms\tquery_p99_ms\terrors" {
		t.Errorf("header %q", lines[0])
	}
	if !strings.HasPrefix(lines[2], "15.000\t100500\t100.000\t") || !strings.Contains(lines[2], "\tnan\tnan\tnan\t1") {
		t.Errorf("second row %q", lines[2])
	}
	back, err := ParseTSV(b.String())
	if err != nil || len(back) != 2 || back[0].Rows != 100000 || math.Abs(back[0].InsP99-iv.InsP99) > 0.001 || !math.IsNaN(back[1].QP99) {
		t.Errorf("read back %+v, %v", back, err)
	}
	if _, err := ParseTSV("a\tb\n1\t2\n"); err == nil {
		t.Errorf("a foreign TSV was accepted")
	}
	var e bytes.Buffer
	WriteTSVRow(&e, ec[0].Fields())
	if e.String() != "10.000\tinsert\t1062\t2\t2\n" {
		t.Errorf("errcodes row %q", e.String())
	}
}

func TestSummaryMeansWorstAndRatios(t *testing.T) {
	nan := math.NaN()
	mk := func(name, engine string, queries int, rows int64, secs float64, p99s ...float64) TaskResult {
		r := TaskResult{Task: Task{Name: name, QueryThreads: queries}, Engine: engine, Rows: rows,
			Elapsed: time.Duration(secs * float64(time.Second)), TSV: filepath.Join("out", name+".tsv")}
		for _, p := range p99s {
			r.Intervals = append(r.Intervals, Interval{InsP99: p, QP50: nan, QP99: nan})
		}
		return r
	}
	res := []TaskResult{
		mk("t_load", "TidesDB", 0, 300000, 10, 10, 30, nan),
		mk("i_load", "InnoDB", 0, 300000, 30, 100, 200),
		mk("r_load", "RocksDB", 0, 300000, 20, 50),
		mk("t_mixed", "TidesDB", 2, 150000, 30, 5),
	}
	if m, w := meanWorst(res[0].Intervals, func(iv Interval) float64 { return iv.InsP99 }); m != 20 || w != 30 {
		t.Errorf("mean/worst %v/%v, want 20/30 (NaN skipped)", m, w)
	}
	rt := ratioTable(res)
	if len(rt.Rows) != 2 || strings.Join(rt.Rows[0], "|") != "load|30000|10000|15000|3.00x|2.00x" ||
		strings.Join(rt.Rows[1], "|") != "mixed|5000|-|-|-|-" {
		t.Errorf("ratios %v", rt.Rows)
	}
	out := t.TempDir()
	var w bytes.Buffer
	if err := WriteSummary(&w, out, RunInfo{Config: "q.toml", Mode: "test", PresetLines: []string{"preset: x"}}, res); err != nil {
		t.Fatal(err)
	}
	csv, _ := os.ReadFile(filepath.Join(out, "summary.csv"))
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(csv), "t_load,TidesDB,load,300000,10.000,30000,20.000,30.000,nan,nan,nan,nan,0,0,ok,") ||
		!strings.Contains(string(md), "| load | 30000 | 10000 | 15000 | 3.00x | 2.00x |") || !strings.Contains(w.String(), "preset: x") {
		t.Errorf("summary:\n%s\n%s\n%s", csv, md, w.String())
	}
}
