// it_test.go runs TPC-C on TidesDB for a few seconds against a throw-away
// server (1 warehouse) and checks the CSVs, the summary, the charts and
// that the consistency check ran. Needs the pinned server, the built
// plugin and go-tpc: runs only with TIDESQL_IT=1.
package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

func TestRunOnTidesDB(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	out := t.TempDir()
	root, _ := filepath.Abs("../../../..")
	o, err := parseFlags([]string{"--engines", "tidesdb", "--warehouses", "1", "--build-vu", "1", "--run-vu", "2",
		"--rampup", "0.05", "--duration", "0.25", "--interval", "5s", "--settle", "1", "--out", out, "--port", "3441",
		"--server-dir", filepath.Join(root, "build", "sql", "tpcc-it")})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	runs := readCSV(t, filepath.Join(out, "runs.csv"))
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	r := runs[0]
	nopm, _ := strconv.ParseFloat(r["nopm"], 64)
	tpm, _ := strconv.ParseFloat(r["tpm"], 64)
	if r["check"] != "passed" || r["error"] != "" || nopm <= 0 || tpm < 2*nopm {
		t.Errorf("run %v", r)
	}
	txns := readCSV(t, filepath.Join(out, "transactions.csv"))
	seen := map[string]bool{}
	for _, x := range txns {
		seen[x["txn"]] = true
	}
	for _, n := range Txns {
		if !seen[n] {
			t.Errorf("no %s row in transactions.csv", n)
		}
	}
	if tl := readCSV(t, filepath.Join(out, "timeline.csv")); len(tl) < 2 {
		t.Errorf("timeline %v: want at least two 5 s points in 15 s", tl)
	}
	if r["variant"] != "plain/glibc" || r["malloc"] != "glibc" || r["tidesdb_build"] == "" {
		t.Errorf("run %v: want the default variant and the plugin's tidesdb_build", r)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "| NOPM (New-Order per minute) |") || !strings.Contains(string(md), "allocator: glibc") ||
		!strings.Contains(string(md), "TidesDB server: allocator glibc; tidesdb_build ") {
		t.Errorf("summary.md:\n%s", md)
	}
	for _, png := range []string{"tpcc_build_time.png", "tpcc_latency.png", "tpcc_nopm.png", "tpcc_tpm.png", "tpcc_tpm_timeline.png"} {
		if st, err := os.Stat(filepath.Join(out, png)); err != nil || st.Size() < 1000 {
			t.Errorf("chart %s: %v", png, err)
		}
	}
	if b, _ := exec.Command("pgrep", "-f", "tpcc-it").Output(); len(b) > 0 {
		t.Errorf("a server is still running: %s", b)
	}
}

// Two variants (the plain build under two names, on jemalloc), one short
// iteration each: each gets its own server and schema, and the variants
// table, variants.csv and the runs' allocator and tidesdb_build columns
// come out.
func TestVariantsOnTidesDB(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	out := t.TempDir()
	root, _ := filepath.Abs("../../../..")
	o, err := parseFlags([]string{"--engines", "tidesdb", "--builds", "plain,same=" + filepath.Join(root, "build", "mariadb", "plugin"),
		"--malloc", "jemalloc", "--warehouses", "1", "--build-vu", "1", "--run-vu", "2", "--rampup", "0", "--duration", "0.1",
		"--interval", "5s", "--settle", "0", "--out", out, "--port", "3442", "--no-charts",
		"--server-dir", filepath.Join(root, "build", "sql", "tpcc-it-variants")})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	runs := readCSV(t, filepath.Join(out, "runs.csv"))
	if len(runs) != 2 || runs[0]["variant"] != "plain/jemalloc" || runs[1]["variant"] != "same/jemalloc" {
		t.Fatalf("runs %v", runs)
	}
	for _, r := range runs {
		if r["check"] != "passed" || r["malloc"] != "jemalloc" || r["tidesdb_build"] == "" {
			t.Errorf("run %v", r)
		}
	}
	vs := readCSV(t, filepath.Join(out, "variants.csv"))
	if len(vs) != 2 || vs[0]["nopm_vs_first"] != "1.000" || vs[1]["ok"] != "1" || vs[1]["nopm_vs_first"] == "" {
		t.Errorf("variants %v", vs)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	for _, w := range []string{"| same/jemalloc | TidesDB |", "libjemalloc.so.2", "tidesdb_build"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("summary.md lacks %q:\n%s", w, md)
		}
	}
	for _, log := range []string{"plain_jemalloc_TidesDB_1_prepare.log", "same_jemalloc_TidesDB_1_run.log"} {
		if _, err := os.Stat(filepath.Join(out, "logs", log)); err != nil {
			t.Error(err)
		}
	}
}

func TestMissingGoTPCAndPluginAreClearErrors(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	o, _ := parseFlags([]string{"--gotpc", "/nonexistent/go-tpc", "--out", t.TempDir()})
	if err := run(o); err == nil || !strings.Contains(err.Error(), "go-tpc not found") {
		t.Errorf("missing go-tpc: %v", err)
	}
	t.Setenv("TIDESQL_PLUGIN_DIR", t.TempDir())
	o, _ = parseFlags([]string{"--engines", "tidesdb", "--out", t.TempDir()})
	if err := run(o); err == nil || !strings.Contains(err.Error(), "ha_tidesdb.so not found") {
		t.Errorf("missing plugin: %v", err)
	}
	o, _ = parseFlags([]string{"--engines", "tidesdb", "--builds", "nothere=" + t.TempDir() + "/none", "--out", t.TempDir()})
	if err := run(o); err == nil || !strings.Contains(err.Error(), "build nothere: plugin directory") {
		t.Errorf("missing build: %v", err)
	}
}

func readCSV(t *testing.T, path string) []map[string]string {
	rows, err := report.ReadCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// --target on a server the test started: the runner builds the schema with
// --engine, runs and checks, and leaves the server up; then --no-prepare
// measures the same tables, and --no-prepare with another warehouse count
// is refused.
func TestExternalServer(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	env, err := server.FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(context.Background(), env, server.Options{Dir: filepath.Join(env.Root, "build", "sql", "tpcc-it-ext"),
		Port: 3442, Preset: server.DefaultPreset(), Engines: []string{"TidesDB"}, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	runner := func(extra ...string) (string, error) {
		out := t.TempDir()
		o, err := parseFlags(append([]string{"--target", "127.0.0.1:3442", "--engine", "TidesDB", "--label", "mine",
			"--warehouses", "1", "--build-vu", "1", "--run-vu", "2", "--rampup", "0", "--duration", "0.1", "--interval", "3s",
			"--settle", "0", "--out", out, "--no-charts"}, extra...))
		if err != nil {
			t.Fatal(err)
		}
		return out, run(o)
	}
	out, err := runner()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Alive() {
		t.Fatal("tpcc stopped the external server")
	}
	r := readCSV(t, filepath.Join(out, "runs.csv"))[0]
	if nopm, _ := strconv.ParseFloat(r["nopm"], 64); r["engine"] != "mine" || r["check"] != "passed" || nopm <= 0 || r["variant"] != "external" {
		t.Errorf("run %v", r)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "external server 127.0.0.1:3442") || !strings.Contains(string(md), "Schema build time") ||
		strings.Contains(string(md), "Data on disk") {
		t.Errorf("summary.md:\n%s", md)
	}
	if _, err := runner(); err == nil || !strings.Contains(err.Error(), "already holds 1 rows") {
		t.Errorf("building over a loaded schema: %v", err)
	}
	if _, err := runner("--no-prepare", "--warehouses", "2"); err == nil || !strings.Contains(err.Error(), "holds 1 warehouses") {
		t.Errorf("--no-prepare with the wrong warehouse count: %v", err)
	}
	if out, err = runner("--no-prepare"); err != nil {
		t.Errorf("--no-prepare: %v", err)
	} else if r := readCSV(t, filepath.Join(out, "runs.csv"))[0]; r["check"] != "passed" {
		t.Errorf("--no-prepare run %v", r)
	}
	if !s.Alive() {
		t.Error("tpcc stopped the external server")
	}
}
