package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tidesql/bench/internal/server"
)

func TestBuildAndMallocFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.variants) != 1 || o.variants[0].Name() != "plain/glibc" || o.variants[0].Build.Dir != "" || o.multi() {
		t.Errorf("default variants %+v", o.variants)
	}
	o, err = parseFlags([]string{"--builds", "plain,pgo lto,pgo+lto,mine=/opt/p", "--malloc", "glibc,JEMALLOC"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range o.variants {
		names = append(names, v.Name())
	}
	want := "plain/glibc plain/jemalloc pgo/glibc pgo/jemalloc lto/glibc lto/jemalloc pgo-lto/glibc pgo-lto/jemalloc mine/glibc mine/jemalloc"
	if strings.Join(names, " ") != want || !o.multi() {
		t.Errorf("variants %s", strings.Join(names, " "))
	}
	if b := o.builds[3]; b.Dir != "build/mariadb-pgo-lto/plugin" || b.Custom {
		t.Errorf("pgo+lto %+v", b)
	}
	if b := o.builds[4]; b.Dir != "/opt/p" || !b.Custom {
		t.Errorf("name=DIR %+v", b)
	}
	env := server.Env{Root: "/r", PluginDir: "/env/plugin"}
	if d := o.builds[0].PluginDir(env); d != "/env/plugin" {
		t.Errorf("plain resolves to %s, want the environment's", d)
	}
	if d := o.builds[1].PluginDir(env); d != "/r/build/mariadb-pgo/plugin" {
		t.Errorf("pgo resolves to %s", d)
	}
	for args, msg := range map[string]string{
		"--builds fast":                `unknown build "fast"`,
		"--builds pgo,pgo":             "pgo given twice",
		"--builds pgo,pgo+lto,lto+pgo": "pgo-lto given twice",
		"--builds x=":                  "no directory",
		"--builds a/b=/p":              "a build name is",
		"--builds ,":                   "no build given",
		"--malloc hoard":               `unknown allocator "hoard"`,
		"--malloc glibc,glibc":         "glibc given twice",
	} {
		_, err := parseFlags(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", args, err, msg)
		}
	}
}

func TestMissingBuildNamesItsCommand(t *testing.T) {
	root := t.TempDir()
	env := server.Env{Root: root, PluginDir: filepath.Join(root, "build", "mariadb", "plugin")}
	bs, _ := parseBuilds("pgo,lto,pgo-lto,mine=" + filepath.Join(root, "mine"))
	for i, cmd := range []string{"build_plugin.sh --pgo", "build_plugin.sh --lto", "build_plugin.sh --pgo --lto", "name=DIR"} {
		err := bs[i].Check(env, []string{"TidesDB", "InnoDB"})
		if err == nil || !strings.Contains(err.Error(), cmd) || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: %v, want the hint %q", bs[i].Name, err, cmd)
		}
	}
	// The directory is there but holds no plugin: still the command.
	dir := filepath.Join(root, "build", "mariadb-pgo", "plugin")
	os.MkdirAll(dir, 0o755)
	if err := bs[0].Check(env, []string{"TidesDB"}); err == nil || !strings.Contains(err.Error(), "ha_tidesdb.so not found") ||
		!strings.Contains(err.Error(), "--pgo") {
		t.Errorf("empty pgo directory: %v", err)
	}
	if err := bs[0].Check(env, []string{"InnoDB"}); err != nil {
		t.Errorf("InnoDB needs no plugin: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "ha_tidesdb.so"), nil, 0o644)
	if err := bs[0].Check(env, []string{"TidesDB", "InnoDB"}); err != nil {
		t.Error(err)
	}
}

func TestScheduleAlternatesVariants(t *testing.T) {
	var got []string
	for _, j := range schedule(2, 3, []string{"TidesDB", "InnoDB"}) {
		got = append(got, strings.Join([]string{string(rune('0' + j.Iteration)), string(rune('a' + j.Variant)), j.Engine[:1]}, ""))
	}
	want := "1aT 1aI 1bT 1bI 1cT 1cI 2aT 2aI 2bT 2bI 2cT 2cI"
	if strings.Join(got, " ") != want {
		t.Errorf("schedule %s\nwant     %s", strings.Join(got, " "), want)
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{100, 110, 90})
	if s.N != 3 || s.Mean != 100 || s.Min != 90 || s.Max != 110 || math.Abs(s.RSD-10) > 1e-9 {
		t.Errorf("%+v: want mean 100, 90..110, sample sd 10 = 10%%", s)
	}
	if f := s.Format("%.0f"); f != "100 (90..110, ±10.0%)" {
		t.Errorf("format %q", f)
	}
	if one := summarize([]float64{7}); one.RSD != 0 || one.Format("%.1f") != "7.0" {
		t.Errorf("one value %+v %q", one, one.Format("%.1f"))
	}
	if none := summarize(nil); none.N != 0 || none.Format("%.0f") != "failed" {
		t.Errorf("no value %+v", none)
	}
}

func TestAggregateVariants(t *testing.T) {
	o, err := parseFlags([]string{"--engines", "tidesdb,innodb", "--builds", "plain,pgo", "--iterations", "3"})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(v, it int, e string, nopm, p99 float64) Result {
		b := ""
		if e == "TidesDB" {
			b = []string{"plain", "pgo"}[v]
		}
		return Result{Engine: e, Iteration: it, Variant: v, TidesDBBuild: b,
			Out: RunOutput{TPMC: nopm, TPMTotal: 2 * nopm, Txn: map[string]TxnStats{"NEW_ORDER": {Count: 1, P99: p99}}}}
	}
	rs := []Result{
		mk(0, 1, "TidesDB", 1000, 10), mk(0, 1, "InnoDB", 800, 20), mk(1, 1, "TidesDB", 1200, 8), mk(1, 1, "InnoDB", 790, 20),
		mk(0, 2, "TidesDB", 1100, 12), mk(0, 2, "InnoDB", 820, 22), mk(1, 2, "TidesDB", 1300, 9), mk(1, 2, "InnoDB", 810, 21),
		mk(0, 3, "TidesDB", 900, 8), mk(0, 3, "InnoDB", 810, 21), mk(1, 3, "TidesDB", 0, 0), mk(1, 3, "InnoDB", 800, 19),
	}
	rs[10].Err = "consistency check FAILED\nx"
	fs := aggregate(o.variants, o.engines, rs)
	if len(fs) != 4 || fs[0].Engine != "TidesDB" || fs[1].Engine != "InnoDB" || fs[2].Variant.Name() != "pgo/glibc" {
		t.Fatalf("order %+v", fs)
	}
	plainT, pgoT := fs[0], fs[2]
	if plainT.NOPM.Mean != 1000 || plainT.NOPM.Min != 900 || plainT.NOPM.Max != 1100 || plainT.TPM.Mean != 2000 ||
		plainT.P99.Mean != 10 || plainT.OK != 3 || plainT.Build != "plain" {
		t.Errorf("plain TidesDB %+v", plainT)
	}
	if pgoT.Runs != 3 || pgoT.OK != 2 || pgoT.NOPM.Mean != 1250 || pgoT.P99.Mean != 8.5 || pgoT.Build != "pgo" {
		t.Errorf("pgo TidesDB (one failed run left out) %+v", pgoT)
	}
	if fs[1].Build != "-" {
		t.Errorf("InnoDB tidesdb_build %q", fs[1].Build)
	}
	tab := variantTable(fs)
	row := strings.Join(tab.Rows[2], " | ")
	for _, w := range []string{"pgo/glibc | TidesDB | pgo | 2/3", "1250 (1200..1300, ±5.7%)", "1.25x | 1.25x | 0.85x"} {
		if !strings.Contains(row, w) {
			t.Errorf("pgo row %q lacks %q", row, w)
		}
	}
	if r := strings.Join(tab.Rows[0], " | "); !strings.Contains(r, "1.00x | 1.00x | 1.00x") {
		t.Errorf("first variant row %q", r)
	}
	csv := variantCSV(server.Env{Root: "/r", PluginDir: "/r/build/mariadb/plugin"}, fs)
	if c := csv[2]; c[2] != "/r/build/mariadb-pgo/plugin" || c[8] != "1250.00" || c[len(c)-3] != "1.250" || c[len(c)-1] != "0.850" {
		t.Errorf("csv row %v", c)
	}
	md := variantMarkdown(o, "s", rs, []string{"TidesDB server: allocator glibc; tidesdb_build plain, pgo"})
	for _, w := range []string{"| plain/glibc | InnoDB |", "- pgo/glibc TidesDB iteration 3: consistency check FAILED",
		"variants (TidesDB plugin build/allocator): plain/glibc, pgo/glibc", "tidesdb_build plain, pgo"} {
		if !strings.Contains(md, w) {
			t.Errorf("summary lacks %q:\n%s", w, md)
		}
	}
}
