package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// testdata/read_write_2t.log is sysbench 1.0.20's output of an
// oltp_read_write run (InnoDB, 2 threads, 3 s, --histogram=on).
func TestParseRecordedRun(t *testing.T) {
	b, err := os.ReadFile("testdata/read_write_2t.log")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseOutput(string(b))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{TPS: 2424.79, QPS: 48501.03, Transactions: 7282, Queries: 145656, Errors: 1, Seconds: 3.0028,
		Min: 0.74, Avg: 0.82, Max: 4.71, P95: 1.06, P99: 1.523}
	r.Intervals = nil
	if !reflect.DeepEqual(r, want) {
		t.Errorf("parsed %+v\nwant   %+v", r, want)
	}
	r, _ = ParseOutput(string(b))
	if len(r.Intervals) != 3 {
		t.Fatalf("%d intervals, want 3", len(r.Intervals))
	}
	if iv := r.Intervals[0]; iv != (Interval{Second: 1, Threads: 2, TPS: 2465.19, QPS: 49350.82, P95: 0.97, ErrPerS: 1}) {
		t.Errorf("first interval %+v", iv)
	}
	if iv := r.Intervals[2]; iv.Second != 3 || iv.P95 != 1.14 {
		t.Errorf("last interval %+v", iv)
	}
}

func TestTruncatedRunIsAnError(t *testing.T) {
	b, _ := os.ReadFile("testdata/read_write_2t.log")
	cut := string(b)[:strings.Index(string(b), "SQL statistics")]
	cut += "FATAL: mysql_drv_query() returned error 2013 (Lost connection to server during query)\n"
	if _, err := ParseOutput(cut); err == nil || !strings.Contains(err.Error(), "Lost connection") {
		t.Errorf("truncated output: err = %v, want one quoting the last lines", err)
	}
}

func TestPercentileOfHistogram(t *testing.T) {
	h := [][2]float64{{1, 50}, {2, 40}, {3, 9}, {10, 1}}
	for q, want := range map[float64]float64{0.5: 1, 0.9: 2, 0.99: 3, 1: 10} {
		if got := percentile(h, q); got != want {
			t.Errorf("percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if percentile(nil, 0.99) != 0 {
		t.Error("empty histogram")
	}
}

func TestSysbenchArguments(t *testing.T) {
	b := Bench{Path: "sysbench", Socket: "/s.sock", DB: "sbtest", Engine: "TidesDB", Tables: 4, Size: 50000}
	a := strings.Join(b.args("oltp_insert", 8), " ")
	for _, w := range []string{"oltp_insert ", "--mysql-socket=/s.sock", "--mysql-storage-engine=TidesDB", "--tables=4",
		"--table-size=50000", "--threads=8", "--mysql-db=sbtest"} {
		if !strings.Contains(a, w) {
			t.Errorf("arguments %q lack %q", a, w)
		}
	}
}

// An external server is reached over TCP as its user; no socket.
func TestSysbenchArgumentsExternal(t *testing.T) {
	b := Bench{Path: "sysbench", Host: "127.0.0.1", Port: 3520, User: "u", Pass: "p", DB: "sbtest", Engine: "SPIDER",
		Tables: 2, Size: 10}
	a := strings.Join(b.args("oltp_point_select", 2), " ")
	for _, w := range []string{"--mysql-host=127.0.0.1", "--mysql-port=3520", "--mysql-user=u", "--mysql-password=p",
		"--mysql-storage-engine=SPIDER"} {
		if !strings.Contains(a, w) {
			t.Errorf("arguments %q lack %q", a, w)
		}
	}
	if strings.Contains(a, "--mysql-socket") || strings.Contains(a, "--mysql-user=root") {
		t.Errorf("external arguments %q name a socket or root", a)
	}
}
