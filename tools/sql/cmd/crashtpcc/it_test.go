// it_test.go runs one durable crash cycle against a throw-away server (1
// warehouse, killed 3 s into the load) and checks its results. Needs the
// pinned server, the built plugin and go-tpc: runs only with TIDESQL_IT=1.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tidesql/bench/internal/report"
)

func TestOneDurableCycle(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	root, _ := filepath.Abs("../../../..")
	out := t.TempDir()
	dir := filepath.Join(root, "build", "sql", "crashtpcc-it")
	defer os.RemoveAll(dir)
	o, err := parseFlags([]string{"--cycles", "1", "--presets", "durable", "--kill-min", "3s", "--kill-max", "3s",
		"--port", "3481", "--server-dir", dir, "--out", out})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	rows, err := report.ReadCSV(filepath.Join(out, "cycles.csv"))
	if err != nil || len(rows) != 1 {
		t.Fatalf("cycles.csv: %v %v", rows, err)
	}
	r := rows[0]
	if r["preset"] != "durable" || r["check"] != "passed" || r["lost"] != "0" || r["acked"] == "0" || r["failures"] != "" ||
		r["acked"] != r["present"] {
		t.Errorf("cycle %v", r)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "durable: 1 cycles, 1 kills;") {
		t.Errorf("summary.md:\n%s", md)
	}
	for _, f := range []string{"prepare.log", "durable-01-gotpc-run.log", "durable-01-check.log", "durable-01-error.log"} {
		if _, err := os.Stat(filepath.Join(out, "logs", f)); err != nil {
			t.Error(err)
		}
	}
}
