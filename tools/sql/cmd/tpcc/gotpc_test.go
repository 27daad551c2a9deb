package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// testdata/run_innodb.log is go-tpc v1.0.9's output of a 25 s run with
// --interval 10s (InnoDB, 2 warehouses, 4 threads).
func TestParseRecordedRun(t *testing.T) {
	b, err := os.ReadFile("testdata/run_innodb.log")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRun(string(b), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.TPMC != 24527.9 || r.TPMTotal != 54083.4 {
		t.Errorf("tpmC %v tpmTotal %v", r.TPMC, r.TPMTotal)
	}
	no := r.Txn["NEW_ORDER"]
	if no.Count != 10212 || no.Avg != 5.3 || no.P95 != 8.9 || no.P99 != 12.1 || no.Max != 30.4 {
		t.Errorf("NEW_ORDER %+v", no)
	}
	if d := r.Txn["DELIVERY"]; d.Count != 870 || d.P99 != 29.4 {
		t.Errorf("DELIVERY %+v", d)
	}
	if r.Errors() != 3 {
		t.Errorf("errors %d, want the three _ERR rows of 1", r.Errors())
	}
	if want := int64(870 + 10212 + 934 + 9592 + 903); r.Count() != want {
		t.Errorf("count %d, want %d", r.Count(), want)
	}
	if len(r.Timeline) != 2 {
		t.Fatalf("timeline %+v, want two 10 s blocks", r.Timeline)
	}
	p := r.Timeline[0]
	if p.Second != 10 || p.NOPM != 23523.6 || math.Abs(p.TPM-(2090.1+23523.6+2467.2+22182.5+2125.1)) > 0.01 {
		t.Errorf("first point %+v", p)
	}
	if r.Timeline[1].Second != 20 || r.Timeline[1].NOPM != 25497.7 {
		t.Errorf("second point %+v", r.Timeline[1])
	}
}

func TestRunWithoutSummaryIsAnError(t *testing.T) {
	b, _ := os.ReadFile("testdata/run_innodb.log")
	cut := string(b)[:strings.Index(string(b), "Finished")] + "[mysql] packets.go:37: unexpected EOF\n"
	if _, err := ParseRun(cut, 10*time.Second); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("err = %v", err)
	}
}

func TestErrorShare(t *testing.T) {
	r := RunOutput{Txn: map[string]TxnStats{"NEW_ORDER": {Count: 90}, "PAYMENT_ERR": {Count: 10}}}
	if err := errorShare(r, 5); err == nil {
		t.Error("10% errors accepted at 5%")
	}
	if err := errorShare(r, 10); err != nil {
		t.Errorf("10%% errors refused at 10%%: %v", err)
	}
}

func TestGoTPCArguments(t *testing.T) {
	g := GoTPC{Path: "go-tpc", Port: 3440, DB: "tpcc", Warehouses: 3, Engine: "TidesDB", Isolation: 2}
	a := strings.Join(g.args(8), " ")
	for _, w := range []string{"-P 3440", "-D tpcc", "--warehouses 3", "-T 8", "default_storage_engine=TidesDB"} {
		if !strings.Contains(a, w) {
			t.Errorf("arguments %q lack %q", a, w)
		}
	}
	if action([]string{"tpcc", "-T", "2", "prepare", "--no-check"}) != "prepare" {
		t.Error("action")
	}
}

func TestCheckThreads(t *testing.T) {
	cases := []struct{ runVU, cpus, want int }{
		{8, 2, 2},  // this machine: one per core
		{8, 1, 2},  // never below 2 while there are users for them
		{4, 16, 4}, // never more than the run's users
		{1, 2, 1},
		{8, 8, 8},
		{0, 2, 1},
	}
	for _, c := range cases {
		if got := CheckThreads(c.runVU, c.cpus); got != c.want {
			t.Errorf("CheckThreads(%d, %d) = %d, want %d", c.runVU, c.cpus, got, c.want)
		}
	}
}

// An external server: its host and user; a server of tpcc's own: 127.0.0.1 as root.
func TestGoTPCArgumentsExternal(t *testing.T) {
	g := GoTPC{Path: "go-tpc", Host: "10.0.0.5", Port: 3520, User: "u", Pass: "p", DB: "tpcc", Warehouses: 4, Engine: "SPIDER"}
	a := strings.Join(g.args(2), " ")
	if !strings.HasPrefix(a, "tpcc -H 10.0.0.5 -P 3520 -U u -p p -D tpcc ") || !strings.Contains(a, "default_storage_engine=SPIDER") {
		t.Errorf("arguments %q", a)
	}
	own := strings.Join(GoTPC{Port: 3440, DB: "tpcc", Engine: "TidesDB"}.args(1), " ")
	if !strings.HasPrefix(own, "tpcc -H 127.0.0.1 -P 3440 -U root -D tpcc ") {
		t.Errorf("own server's arguments %q", own)
	}
}
