package main

import (
	"math"
	"strings"
	"testing"
)

func TestMarkdownRatiosAndFailures(t *testing.T) {
	cfg, _ := LoadConfig(envOf(map[string]string{"THREAD_COUNTS": "1", "WORKLOADS": "oltp_insert"}))
	rows := []Row{
		{Engine: "TidesDB", Workload: "oltp_insert", Threads: 1, TableSize: 50000, Iteration: 1, R: Result{TPS: 300, P95: 1, P99: 2}},
		{Engine: "InnoDB", Workload: "oltp_insert", Threads: 1, TableSize: 50000, Iteration: 1, R: Result{TPS: 100, P95: 3, P99: math.NaN(), Errors: 4}},
		{Engine: "RocksDB", Workload: "oltp_insert", Threads: 1, TableSize: 50000, Iteration: 1, Err: "sysbench: exit 1\nmore"},
	}
	md := Markdown(cfg, "x", rows, []string{"a note"})
	for _, w := range []string{"| oltp_insert | 1 | 300 | 100 (4 err) | failed | 3.00x | - |",
		"| oltp_insert | 1 | 1.00 | 2.00 | 3.00 | 0.00 | failed | failed |", "note: a note",
		"MyRocks oltp_insert 1 threads (50000 rows), iteration 1: sysbench: exit 1", "preset: relaxed/equal"} {
		if !strings.Contains(md, w) {
			t.Errorf("summary.md lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "more") {
		t.Error("a failure's later lines belong in the log, not the table")
	}
}

func TestIterationsAreAveraged(t *testing.T) {
	rows := []Row{
		{Engine: "TidesDB", Workload: "w", Threads: 8, TableSize: 1, Iteration: 1, R: Result{TPS: 100, P95: 2, P99: 4}},
		{Engine: "TidesDB", Workload: "w", Threads: 8, TableSize: 1, Iteration: 2, R: Result{TPS: 300, P95: 4, P99: 6}},
	}
	c := cells(rows)[cellKey{"TidesDB", "w", 8, 1}]
	if c.n != 2 || c.tps != 200 || c.p95 != 3 || c.p99 != 5 {
		t.Errorf("cell %+v", *c)
	}
}

func TestCSVRows(t *testing.T) {
	r := Row{Engine: "InnoDB", Workload: "oltp_read_write", Threads: 2, TableSize: 2000, Iteration: 1, DataBytes: 42,
		R: Result{TPS: 2424.79, QPS: 48501.03, Avg: 0.82, P95: 1.06, P99: 1.523, Max: 4.71, Errors: 1,
			Intervals: []Interval{{1, 2, 2465.19, 49350.82, 0.97, 1}}}}
	s := summaryRows([]Row{r})[0]
	if len(s) != len(summaryHeader) || strings.Join(s, ",") != "InnoDB,oltp_read_write,2,2000,1,2424.79,48501.03,0.82,1.06,1.52,4.71,1,0,42," {
		t.Errorf("summary row %q", s)
	}
	d := detailRows([]Row{r})
	if len(d) != 1 || len(d[0]) != len(detailHeader) || d[0][5] != "1" || d[0][6] != "2465.19" || d[0][8] != "0.97" {
		t.Errorf("detail rows %q", d)
	}
}
