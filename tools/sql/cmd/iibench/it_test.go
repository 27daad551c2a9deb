// it_test.go runs iibench --server on TidesDB for a few seconds (a load
// task, then a mixed task on its table) and checks the TSVs, the summary
// and that no server is left running. Needs the pinned server and the
// built plugin: runs only with TIDESQL_IT=1.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tidesql/bench/internal/server"
)

const itQueue = `[defaults]
driver = "mariadb"
dialect = "mariadb"
dsn = "itbench:it-pass@unix(/tmp/not-used.sock)/iibench_it"
num_secondary_indexes = 3
num_char_fields = 2
length_char_fields = 40
percent_compressible = 50
rows_per_insert = 200
report_every = "1s"
query_limit = 10
writer_threads = 2
[[task]]
name = "tides_load"
table = "purchases_it"
create_table = true
table_options = "ENGINE=TidesDB DEFAULT CHARSET=utf8mb4"
duration = "20s"
max_rows_total = 20000
log_file = "load.tsv"
[[task]]
name = "tides_mixed"
table = "purchases_it"
create_table = false
max_rows_per_second = 1000
query_threads = 2
queries_per_second = 40
query_start_at_rows = 10000
duration = "3s"
log_file = "sub/mixed.tsv"
`

func TestServerRunOnTidesDB(t *testing.T) {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	env, err := server.FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cfg := filepath.Join(out, "it.toml")
	os.WriteFile(cfg, []byte(itQueue), 0o644)
	dir := filepath.Join(env.Root, "build", "sql", "iibench-it")
	err = run(options{config: cfg, useServer: true, durability: server.Relaxed, memory: server.Equal,
		out: out, serverDir: dir, port: 3421, noCharts: true, malloc: "mimalloc"})
	if err != nil {
		t.Fatal(err)
	}

	load := readTSV(t, filepath.Join(out, "load.tsv"))
	last := load[len(load)-1]
	if last.Rows != 20000 {
		t.Errorf("load inserted %d rows, want max_rows_total 20000", last.Rows)
	}
	for _, iv := range load {
		if iv.Errors != 0 || iv.RowsPerS <= 0 || iv.InsP99 <= 0 || iv.InsP99 > iv.InsMax {
			t.Errorf("load interval %+v", iv)
		}
	}
	mixed := readTSV(t, filepath.Join(out, "sub", "mixed.tsv"))
	if len(mixed) < 2 || len(mixed) > 4 {
		t.Errorf("%d mixed intervals for 3 s at 1 s each", len(mixed))
	}
	m := mixed[len(mixed)-1]
	if m.Elapsed < 2.9 || m.Elapsed > 5 {
		t.Errorf("mixed task ended at %.2f s, want about 3", m.Elapsed)
	}
	if m.Rows < 2000 || m.Rows > 4400 {
		t.Errorf("mixed inserted %d rows in 3 s at 1000 rows/s", m.Rows)
	}
	var queries float64
	for _, iv := range mixed {
		queries += iv.QueriesPerS
		if iv.Errors != 0 || iv.QP99 <= 0 || iv.QP50 > iv.QP99 {
			t.Errorf("mixed interval %+v", iv)
		}
	}
	if q := queries / float64(len(mixed)); q < 30 || q > 45 {
		t.Errorf("%.1f queries/s on average, want about 40", q)
	}
	for _, f := range []string{"load.tsv.errcodes", "sub/mixed.tsv.errcodes"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || strings.TrimSpace(string(b)) != strings.Join(ErrCodesHeader, "\t") {
			t.Errorf("%s: %q %v (want the header only: no errors)", f, b, err)
		}
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.csv"))
	if err != nil || !strings.Contains(string(sum), "tides_load,TidesDB,load,20000,") ||
		!strings.Contains(string(sum), "tides_mixed,TidesDB,mixed,") || strings.Count(string(sum), ",ok,") != 2 {
		t.Errorf("summary.csv:\n%s", sum)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "preset: relaxed/equal") || !strings.Contains(string(md), "TidesDB server:") {
		t.Errorf("summary.md lacks the preset or the memory note:\n%s", md)
	}
	if !strings.Contains(string(md), "allocator: mimalloc") || !strings.Contains(string(md), "libmimalloc.so.2, mapped); tidesdb_build ") {
		t.Errorf("summary.md lacks the allocator or tidesdb_build:\n%s", md)
	}
	if pids := serversIn(dir); len(pids) > 0 {
		t.Errorf("mariadbd still running from %s: pids %v", dir, pids)
	}
}

func readTSV(t *testing.T, path string) []Interval {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ivs, err := ParseTSV(string(b))
	if err != nil || len(ivs) == 0 {
		t.Fatalf("%s: %v (%d intervals)", path, err, len(ivs))
	}
	return ivs
}

// serversIn lists the pids of mariadbd processes whose command line
// names the server directory.
func serversIn(dir string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, "mariadbd") && strings.Contains(cmd, dir) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
