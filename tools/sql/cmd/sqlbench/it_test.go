// it_test.go runs a few-second sweep on TidesDB against a throw-away
// server and checks every output file, the charts included, and that no
// server is left running. Needs the pinned server, the built plugin and
// sysbench: runs only with TIDESQL_IT=1.
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

func TestSweepOnTidesDB(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	out := t.TempDir()
	cfg, err := LoadConfig(envOf(map[string]string{"ENGINES": "TidesDB", "TABLES": "2", "TABLE_SIZES": "1000",
		"THREAD_COUNTS": "1 2", "TIME": "2", "WARMUP": "1", "WORKLOADS": "oltp_point_select oltp_insert",
		"OUT": out, "PORT": "3431", "MALLOC": "tcmalloc"}))
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../../../..")
	cfg.ServerDir = filepath.Join(root, "build", "sql", "sqlbench-it")
	if err := run(cfg); err != nil {
		t.Fatal(err)
	}
	sum, _ := filepath.Glob(filepath.Join(out, "summary_*.csv"))
	det, _ := filepath.Glob(filepath.Join(out, "detail_*.csv"))
	set, _ := filepath.Glob(filepath.Join(out, "settings_*.csv"))
	if len(sum) != 1 || len(det) != 1 || len(set) != 1 {
		t.Fatalf("outputs: %v %v %v", sum, det, set)
	}
	rows := readCSV(t, sum[0])
	if len(rows) != 4 {
		t.Fatalf("%d summary rows, want 2 workloads x 2 thread counts", len(rows))
	}
	for _, r := range rows {
		tps, _ := strconv.ParseFloat(r["tps"], 64)
		p99, _ := strconv.ParseFloat(r["p99_ms"], 64)
		p95, _ := strconv.ParseFloat(r["p95_ms"], 64)
		disk, _ := strconv.ParseInt(r["data_bytes"], 10, 64)
		if r["error"] != "" || tps <= 0 || p99 < p95 || disk <= 0 {
			t.Errorf("summary row %v", r)
		}
	}
	if d := readCSV(t, det[0]); len(d) < 4 {
		t.Errorf("%d per-second rows for 4 runs of 2 s (sysbench omits the last second)", len(d))
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "| oltp_insert | 2 |") || !strings.Contains(string(md), "preset: relaxed/equal") ||
		!strings.Contains(string(md), "allocator (MALLOC): tcmalloc") || !strings.Contains(string(md), "libtcmalloc_minimal.so.4, mapped); tidesdb_build ") {
		t.Errorf("summary.md:\n%s", md)
	}
	if b, _ := os.ReadFile(set[0]); !strings.Contains(string(b), "TidesDB,allocator (LD_PRELOAD),glibc,tcmalloc") {
		t.Errorf("settings lack the allocator:\n%s", b)
	}
	for _, png := range []string{"tps_comparison.png", "p95_latency_comparison.png", "scaling_efficiency.png", "tps_over_time_2t.png"} {
		if st, err := os.Stat(filepath.Join(out, png)); err != nil || st.Size() < 1000 {
			t.Errorf("chart %s: %v", png, err)
		}
	}
	if b, _ := exec.Command("pgrep", "-f", "sqlbench-it").Output(); len(b) > 0 {
		t.Errorf("a server is still running: %s", b)
	}
}

func TestMissingSysbenchIsAClearError(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	cfg, _ := LoadConfig(envOf(map[string]string{"SYSBENCH": "/nonexistent/sysbench", "OUT": t.TempDir()}))
	if err := run(cfg); err == nil || !strings.Contains(err.Error(), "sysbench not found") {
		t.Errorf("err = %v", err)
	}
}

func readCSV(t *testing.T, path string) []map[string]string {
	rows, err := report.ReadCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TARGET on a server the test started: sqlbench prepares with ENGINE, then
// refuses to prepare over its tables, then measures them with NO_PREPARE,
// and the server is still up (sqlbench stopped nothing); the reports say
// "external server" and hold no data size.
func TestExternalServer(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	env, err := server.FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(context.Background(), env, server.Options{Dir: filepath.Join(env.Root, "build", "sql", "sqlbench-it-ext"),
		Port: 3432, Preset: server.DefaultPreset(), Engines: []string{"TidesDB"}, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	base := map[string]string{"TARGET": "127.0.0.1:3432", "ENGINE": "TidesDB", "LABEL": "mine", "TABLES": "2",
		"TABLE_SIZES": "500", "THREAD_COUNTS": "2", "TIME": "2", "WARMUP": "0", "WORKLOADS": "oltp_point_select", "NO_CHARTS": "1"}
	sweep := func(extra map[string]string) (string, error) {
		e := map[string]string{"OUT": t.TempDir()}
		for k, v := range base {
			e[k] = v
		}
		for k, v := range extra {
			e[k] = v
		}
		cfg, err := LoadConfig(envOf(e))
		if err != nil {
			t.Fatal(err)
		}
		return e["OUT"], run(cfg)
	}
	out, err := sweep(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Alive() {
		t.Fatal("sqlbench stopped the external server")
	}
	db, _ := s.Open("sbtest")
	defer db.Close()
	var engine string
	if err := db.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME='sbtest2'").Scan(&engine); err != nil || engine != "TidesDB" {
		t.Errorf("sbtest2: engine %q, %v", engine, err)
	}
	sum, _ := filepath.Glob(filepath.Join(out, "summary_*.csv"))
	if len(sum) != 1 {
		t.Fatalf("summary: %v", sum)
	}
	for _, r := range readCSV(t, sum[0]) {
		if tps, _ := strconv.ParseFloat(r["tps"], 64); r["engine"] != "mine" || tps <= 0 || r["data_bytes"] != "0" {
			t.Errorf("summary row %v", r)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "external server 127.0.0.1:3432") || strings.Contains(string(md), "data on disk after") {
		t.Errorf("summary.md:\n%s", md)
	}
	if st, _ := filepath.Glob(filepath.Join(out, "settings_*.csv")); len(st) != 0 {
		t.Errorf("a settings dump of an external server: %v", st)
	}
	if _, err := sweep(nil); err == nil || !strings.Contains(err.Error(), "exists on the external server") {
		t.Errorf("prepare over existing tables: %v", err)
	}
	if _, err := sweep(map[string]string{"NO_PREPARE": "1", "TABLE_SIZES": "400"}); err == nil || !strings.Contains(err.Error(), "holds 500 rows") {
		t.Errorf("NO_PREPARE with the wrong size: %v", err)
	}
	if _, err := sweep(map[string]string{"NO_PREPARE": "1"}); err != nil {
		t.Errorf("NO_PREPARE: %v", err)
	}
	if !s.Alive() {
		t.Error("sqlbench stopped the external server")
	}
}
