package main

import (
	"math"
	"strings"
	"testing"
)

func TestQuickAndSeedPresets(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.warehouses != 2 || o.buildVU != 2 || o.runVU != 4 || o.duration != 1 || o.rampup != 0.25 || o.settle != 5 ||
		len(o.engines) != 3 || o.preset.Isolation != "READ-COMMITTED" {
		t.Errorf("quick %+v", o)
	}
	// The seed's command line (000), with our engine names.
	s, err := parseFlags(strings.Fields("--preset seed --engines tidesdb,innodb --iterations 1 --warehouses 100 " +
		"--build-vu 8 --run-vu 8 --rampup 5 --duration 15 --settle 90"))
	if err != nil {
		t.Fatal(err)
	}
	if s.warehouses != 100 || s.runVU != 8 || s.duration != 15 || s.settle != 90 || len(s.engines) != 2 ||
		s.preset.InnoDBCache != 2<<30 || s.preset.MemLimit < 4<<30 {
		t.Errorf("seed %+v", s)
	}
	if z, _ := parseFlags([]string{"--rampup", "0", "--settle", "0"}); z.rampup != 0 || z.settle != 0 {
		t.Errorf("explicit zero ramp-up and settle overridden: %+v", z)
	}
}

// --rocksdb-mem-limit raises MyRocks's limit only; below --mem-limit it is refused.
func TestRocksDBMemLimitFlag(t *testing.T) {
	o, err := parseFlags(strings.Fields("--cache 64M --mem-limit 512M --rocksdb-mem-limit 768M"))
	if err != nil {
		t.Fatal(err)
	}
	if o.preset.LimitFor("TidesDB") != 512<<20 || o.preset.LimitFor("InnoDB") != 512<<20 || o.preset.LimitFor("RocksDB") != 768<<20 {
		t.Errorf("limits %+v", o.preset)
	}
	for _, args := range []string{"--mem-limit 1G --rocksdb-mem-limit 768M", "--rocksdb-mem-limit lots",
		"--memory seed --rocksdb-mem-limit 2G"} {
		if _, err := parseFlags(strings.Fields(args)); err == nil {
			t.Errorf("%q accepted", args)
		} else if !strings.Contains(err.Error(), "MyRocks") && !strings.Contains(err.Error(), "--rocksdb-mem-limit") {
			t.Errorf("%q: the error names neither MyRocks nor the flag: %v", args, err)
		}
	}
}

// --compression sets every engine's compression (none by default), and the
// servers' my.cnf carries it.
func TestCompressionFlag(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := o.preset; p.TidesDBCompression != "NONE" || p.InnoDBCompression != "NONE" || p.RocksDBCompression != "NONE" {
		t.Errorf("default compression %+v", p)
	}
	if o, err = parseFlags(strings.Fields("--compression lz4")); err != nil {
		t.Fatal(err)
	}
	cnf := strings.Join(o.preset.CnfLines(), "\n")
	for _, want := range []string{"tidesdb_default_compression = LZ4", "innodb_compression_algorithm = lz4",
		"innodb_compression_default = ON", "rocksdb_default_cf_options = compression=kLZ4Compression"} {
		if !strings.Contains(cnf, want) {
			t.Errorf("my.cnf lacks %q:\n%s", want, cnf)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--engines", "myisam"}, {"--warehouses", "-1"}, {"--run-vu", "-2"},
		{"--duration", "0.01"}, {"--preset", "big"}, {"--isolation", "SNAPSHOT"}, {"--durability", "never"},
		{"--cache", "lots"}, {"--iterations", "0"}, {"stray"}, {"--max-err-pct", "101"}, {"--compression", "gzip"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestSummaryAdvantageDirections(t *testing.T) {
	o, _ := parseFlags([]string{"--engines", "tidesdb,innodb,rocksdb"})
	mk := func(e string, build, nopm, p99 float64) Result {
		return Result{Engine: e, Iteration: 1, BuildSecs: build,
			Out: RunOutput{TPMC: nopm, TPMTotal: 2 * nopm, Txn: map[string]TxnStats{"NEW_ORDER": {Count: 1, P99: p99}}}}
	}
	rs := []Result{mk("TidesDB", 100, 6000, 10), mk("InnoDB", 50, 1000, 300), {Engine: "RocksDB", Iteration: 1, Err: "check FAILED\nx"}}
	md := Markdown(o, "s", rs, nil)
	for _, w := range []string{"| Schema build time (s) | 100 | 50 | failed | 0.50x | - |",
		"| NOPM (New-Order per minute) | 6000 | 1000 | failed | 6.00x | - |",
		"| New-Order p99 (ms) | 10.00 | 300.00 | failed | 30.00x | - |",
		"- MyRocks iteration 1: check FAILED"} {
		if !strings.Contains(md, w) {
			t.Errorf("summary lacks %q:\n%s", w, md)
		}
	}
	if !math.IsNaN(mean(rs, "RocksDB", func(r Result) float64 { return r.BuildSecs })) {
		t.Error("a failed run counted in the mean")
	}
}

func TestExternalTarget(t *testing.T) {
	o, err := parseFlags(strings.Fields("--target 127.0.0.1:3520,user=bench --engine SPIDER --label Spider-2 --no-prepare " +
		"--warehouses 4 --rampup 0 --settle 0 --duration 0.5 --no-check"))
	if err != nil {
		t.Fatal(err)
	}
	if o.ext == nil || o.ext.t.Port != 3520 || o.ext.t.User != "bench" || o.ext.engine != "SPIDER" || !o.ext.noPrepare ||
		!o.noCheck || len(o.engines) != 1 || o.engines[0] != "Spider-2" || o.warehouses != 4 {
		t.Errorf("external %+v %+v", o, o.ext)
	}
	l := strings.Join(o.Lines(), "\n")
	if !strings.Contains(l, "external server 127.0.0.1:3520 as bench") || !strings.Contains(l, "--no-prepare") ||
		strings.Contains(l, "allocator:") {
		t.Errorf("lines:\n%s", l)
	}
	d, err := parseFlags(strings.Fields("--target 127.0.0.1:3529 --engine TidesDB"))
	if err != nil || d.ext.label != "TidesDB (external)" || d.ext.noPrepare || d.noCheck {
		t.Errorf("defaults %+v %v", d.ext, err)
	}
	if n, _ := parseFlags(nil); n.ext != nil {
		t.Error("no --target, yet external")
	}
}

// Flags that configure a server tpcc starts contradict --target; external
// flags without --target are refused too.
func TestExternalContradictions(t *testing.T) {
	ext := "--target 127.0.0.1:3520 --engine TidesDB "
	for _, args := range []string{ext + "--mem-limit 1G", ext + "--engines tidesdb", ext + "--malloc jemalloc",
		ext + "--builds pgo", ext + "--durability durable", ext + "--memory seed", ext + "--cache 1G", ext + "--compression lz4",
		ext + "--cnf x.cnf", ext + "--server-dir /tmp/x", ext + "--port 3441",
		"--target 127.0.0.1:3520", "--target /tmp/m.sock --engine TidesDB", "--target host --engine TidesDB",
		"--target 127.0.0.1:3520 --engine no-such", "--engine SPIDER", "--label x", "--no-prepare"} {
		_, err := parseFlags(strings.Fields(args))
		if err == nil {
			t.Errorf("%q accepted", args)
		} else if strings.Contains(args, "--mem-limit") && !strings.Contains(err.Error(), "--mem-limit") {
			t.Errorf("%q: error does not name --mem-limit: %v", args, err)
		}
	}
}

// The report on an external server: no data-on-disk row (not measured), no
// build time with --no-prepare, no variant in runs.csv.
func TestExternalSummary(t *testing.T) {
	o, err := parseFlags(strings.Fields("--target 127.0.0.1:3520 --engine SPIDER --label Spider-2 --no-prepare"))
	if err != nil {
		t.Fatal(err)
	}
	rs := []Result{{Engine: "Spider-2", Iteration: 1, Conditions: 11,
		Out: RunOutput{TPMC: 1000, TPMTotal: 2000, Txn: map[string]TxnStats{"NEW_ORDER": {Count: 1, P99: 9}}}}}
	md := Markdown(o, "s", rs, nil)
	if !strings.Contains(md, "| NOPM (New-Order per minute) | 1000 |") || strings.Contains(md, "Data on disk") ||
		strings.Contains(md, "Schema build time") || strings.Contains(md, "Advantage") {
		t.Errorf("external summary:\n%s", md)
	}
	row := strings.Join(runRows(o, rs)[0], ",")
	if !strings.HasPrefix(row, "Spider-2,1,") || !strings.Contains(row, ",passed,0,,external,,,") {
		t.Errorf("runs.csv row %q", row)
	}
}

// --check-engines names engines that run; it contradicts --no-check and
// --target; the engines left out are not checked.
func TestCheckEngines(t *testing.T) {
	o, err := parseFlags(strings.Fields("--engines tidesdb,innodb,rocksdb --check-engines tidesdb"))
	if err != nil {
		t.Fatal(err)
	}
	if !o.checks("TidesDB") || o.checks("InnoDB") || o.checks("RocksDB") || o.noCheckFlag() != "--check-engines" {
		t.Errorf("checks %+v", o.checkEngines)
	}
	all, _ := parseFlags(strings.Fields("--engines tidesdb,innodb"))
	if !all.checks("TidesDB") || !all.checks("InnoDB") {
		t.Error("without --check-engines every engine is checked")
	}
	none, _ := parseFlags(strings.Fields("--engines tidesdb --no-check"))
	if none.checks("TidesDB") || none.noCheckFlag() != "--no-check" {
		t.Error("--no-check still checks")
	}
	for _, args := range []string{"--engines tidesdb --check-engines innodb", "--check-engines tidesdb --no-check",
		"--check-engines nosuch", "--target 127.0.0.1:3520 --engine TidesDB --check-engines tidesdb"} {
		if _, err := parseFlags(strings.Fields(args)); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
