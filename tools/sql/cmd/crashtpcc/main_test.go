package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.cycles != 3 || len(o.presets) != 2 || o.presets[0] != "relaxed" || o.presets[1] != "durable" ||
		o.warehouses != 1 || o.port != 3480 || o.seed == 0 || o.killMin != 3*time.Second {
		t.Errorf("defaults %+v", o)
	}
	p, err := o.preset("durable")
	if err != nil || p.TidesDBSyncMode() != "FULL" || p.TidesDBCache != 64<<20 || p.WriteBuffer != 16<<20 {
		t.Errorf("durable preset %+v %v", p, err)
	}
	if p, _ := o.preset("relaxed"); p.TidesDBSyncMode() != "NONE" {
		t.Errorf("relaxed preset syncs %s", p.TidesDBSyncMode())
	}
	o, err = parseFlags([]string{"--cycles", "20", "--presets", "durable", "--seed", "7"})
	if err != nil || o.cycles != 20 || len(o.presets) != 1 || o.seed != 7 {
		t.Errorf("%+v %v", o, err)
	}
	for _, bad := range [][]string{{"--cycles", "0"}, {"--presets", "fast"}, {"--presets", ""},
		{"--kill-min", "10s", "--kill-max", "5s"}, {"--kill-min", "0s"}, {"--clients", "0"}, {"--cache", "x"},
		{"--write-buffer", "1M"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestClassify(t *testing.T) {
	o := Order{W: 1, D: 2, O: 3001, C: 17, OlCnt: 7}
	cases := []struct {
		f    Found
		want Status
	}{
		{Found{}, Lost},
		{Found{Order: true, C: 17, OlCnt: 7, Lines: 7, NewOrder: true}, Present},
		{Found{Order: true, C: 17, OlCnt: 7, Lines: 7, Carrier: true}, Present},  // delivered
		{Found{Order: true, C: 99, OlCnt: 5, Lines: 5, NewOrder: true}, Lost},    // o_id reused
		{Found{Order: true, C: 17, OlCnt: 7, Lines: 6, NewOrder: true}, Partial}, // a line missing
		{Found{Order: true, C: 17, OlCnt: 7, Lines: 7}, Partial},                 // no new_order, not delivered
		{Found{Order: true, C: 17, OlCnt: 7, Lines: 7, Carrier: true, NewOrder: true}, Partial},
		{Found{Lines: 7}, Partial},
		{Found{NewOrder: true}, Partial},
	}
	for i, c := range cases {
		if got, why := Classify(o, c.f); got != c.want {
			t.Errorf("case %d %+v: %v (%s), want %v", i, c.f, got, why, c.want)
		}
	}
}

func TestJudge(t *testing.T) {
	orders := []Order{{W: 1, D: 1, O: 10, C: 1, OlCnt: 5}, {W: 1, D: 1, O: 11, C: 1, OlCnt: 5}, {W: 1, D: 1, O: 12, C: 1, OlCnt: 5},
		{W: 1, D: 2, O: 10, C: 1, OlCnt: 5}, {W: 1, D: 2, O: 11, C: 1, OlCnt: 5}}
	ok := Found{Order: true, C: 1, OlCnt: 5, Lines: 5, NewOrder: true}
	found := map[[3]int]Found{{1, 1, 10}: ok, {1, 1, 12}: ok, {1, 2, 10}: ok, {1, 2, 11}: {Order: true, C: 1, OlCnt: 5, Lines: 2, NewOrder: true}}
	v := Judge(orders, found)
	if v.Checked != 5 || v.Present != 3 || v.Lost != 1 || v.Holes != 1 || v.Partial != 1 || len(v.Problems) != 1 ||
		len(v.LostKeys) != 1 || v.LostKeys[0].O != 11 {
		t.Errorf("%+v", v)
	}
	// The tail lost: a prefix, no hole.
	v = Judge(orders[:3], map[[3]int]Found{{1, 1, 10}: ok})
	if v.Lost != 2 || v.Holes != 0 {
		t.Errorf("%+v", v)
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	if Percentile(v, 50) != 3 || Percentile(v, 99) != 5 || Percentile(v, 100) != 5 || Percentile(v, 0) != 1 || Percentile(nil, 50) != 0 {
		t.Errorf("percentiles of %v", v)
	}
	if v[0] != 5 {
		t.Error("Percentile sorted its argument")
	}
}

func TestFailuresAndSummary(t *testing.T) {
	cs := []Cycle{
		{Preset: "relaxed", N: 1, Acked: 100, Present: 90, Lost: 10, Check: "passed", Recovery: 1},
		{Preset: "relaxed", N: 2, Acked: 100, Present: 100, Check: "passed", Recovery: 3},
		{Preset: "durable", N: 1, Acked: 100, Present: 99, Lost: 1, LostKeys: "(1,2,3)", Check: "passed", Recovery: 2},
		{Preset: "durable", N: 2, Acked: 50, Present: 50, Check: "FAILED", Recovery: 2},
		{Preset: "durable", N: 3, Acked: 5, RestartErr: "mariadbd exited during start-up:\n  log"},
	}
	if f := cs[0].Failures(); len(f) != 0 {
		t.Errorf("relaxed loss fails: %v", f)
	}
	if f := cs[2].Failures(); len(f) != 1 || !strings.Contains(f[0], "(1,2,3)") {
		t.Errorf("durable loss: %v", f)
	}
	if f := cs[3].Failures(); len(f) != 1 || !strings.Contains(f[0], "check FAILED") {
		t.Errorf("failed check: %v", f)
	}
	if f := cs[4].Failures(); len(f) != 1 || !strings.Contains(f[0], "did not restart") {
		t.Errorf("no restart: %v", f)
	}
	if f := (Cycle{Preset: "relaxed", Check: "passed"}).Failures(); len(f) != 1 {
		t.Errorf("a cycle with nothing acknowledged passes: %v", f)
	}
	if l := cs[4].Line(); !strings.Contains(l, "SERVER DID NOT RESTART") {
		t.Errorf("line %q", l)
	}
	s := Summarize(cs)
	if len(s) != 2 || s[0].Preset != "relaxed" || s[0].Cycles != 2 || s[0].Lost != 10 || s[0].Failed != 0 || s[0].RecP50 != 1 ||
		s[0].RecP99 != 3 || s[0].ChecksPassed != 2 {
		t.Errorf("relaxed %+v", s[0])
	}
	if s[1].Cycles != 3 || s[1].Acked != 155 || s[1].Lost != 1 || s[1].Failed != 3 || s[1].ChecksPassed != 1 || s[1].RecMax != 2 {
		t.Errorf("durable %+v", s[1])
	}
	if !strings.Contains(s[1].Line(), "go-tpc check passed 1/3") {
		t.Errorf("%s", s[1].Line())
	}
}
