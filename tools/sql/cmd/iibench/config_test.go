// config_test.go checks the task-file reader: the seed's queue loads as
// written, and unknown keys and bad values are errors naming key and task.
package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// seedQueue is the task queue printed in the seed article, verbatim.
const seedQueue = `[defaults]
driver = "mariadb"
dialect = "mariadb"
dsn = "iibench:iibench@unix(/tmp/mariadb.sock)/iibench"
num_secondary_indexes = 3
num_char_fields = 4
length_char_fields = 100
percent_compressible = 30
rows_per_insert = 1000
report_every = "10s"
query_limit = 10
writer_threads = 16
[[task]]
name = "innodb_load_30M"
table = "purchases_innodb"
create_table = true
table_options = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 ROW_FORMAT=DYNAMIC"
duration = "20m"
max_rows_total = 30000000
log_file = "innodb_load.tsv"
[[task]]
name = "innodb_mixed_15m"
table = "purchases_innodb"
create_table = false
writer_threads = 8
max_rows_per_second = 30000
query_threads = 8
queries_per_second = 300
query_start_at_rows = 1000000
duration = "15m"
log_file = "innodb_mixed.tsv"
[[task]]
name = "tidesdb_load_30M"
table = "purchases_tides"
create_table = true
table_options = "ENGINE=TidesDB DEFAULT CHARSET=utf8mb4"
duration = "20m"
max_rows_total = 30000000
log_file = "tidesdb_load.tsv"
[[task]]
name = "tidesdb_mixed_15m"
table = "purchases_tides"
create_table = false
writer_threads = 8
max_rows_per_second = 30000
query_threads = 8
queries_per_second = 300
query_start_at_rows = 1000000
duration = "15m"
log_file = "tidesdb_mixed.tsv"
[[task]]
name = "rocksdb_load_30M"
table = "purchases_rocks"
create_table = true
table_options = "ENGINE=RocksDB DEFAULT CHARSET=utf8mb4"
duration = "20m"
max_rows_total = 30000000
log_file = "rocksdb_load.tsv"
[[task]]
name = "rocksdb_mixed_15m"
table = "purchases_rocks"
create_table = false
writer_threads = 8
max_rows_per_second = 30000
query_threads = 8
queries_per_second = 300
query_start_at_rows = 1000000
duration = "15m"
log_file = "rocksdb_mixed.tsv"
`

func TestSeedQueueLoads(t *testing.T) {
	tasks, err := ParseConfig(seedQueue)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 6 {
		t.Fatalf("%d tasks, want 6", len(tasks))
	}
	load, mixed := tasks[0], tasks[1]
	want := Task{Index: 1, Name: "innodb_load_30M", Driver: "mariadb", Dialect: "mariadb",
		DSN: "iibench:iibench@unix(/tmp/mariadb.sock)/iibench", NumSecondaryIndexes: 3, NumCharFields: 4,
		LengthCharFields: 100, PercentCompressible: 30, RowsPerInsert: 1000, ReportEvery: 10 * time.Second,
		QueryLimit: 10, WriterThreads: 16, Table: "purchases_innodb", CreateTable: true,
		TableOptions: "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 ROW_FORMAT=DYNAMIC", Duration: 20 * time.Minute,
		MaxRowsTotal: 30000000, LogFile: "innodb_load.tsv", Engine: "InnoDB"}
	if !reflect.DeepEqual(load, want) {
		t.Errorf("task 1:\n got %+v\nwant %+v", load, want)
	}
	if mixed.WriterThreads != 8 || mixed.MaxRowsPerSecond != 30000 || mixed.QueryThreads != 8 ||
		mixed.QueriesPerSecond != 300 || mixed.QueryStartAtRows != 1000000 || mixed.Duration != 15*time.Minute ||
		mixed.CreateTable || mixed.MaxRowsTotal != 0 || mixed.Phase() != "mixed" || load.Phase() != "load" {
		t.Errorf("task 2: %+v", mixed)
	}
	// the mixed tasks name no engine: they inherit the load task's
	for i, e := range []string{"InnoDB", "InnoDB", "TidesDB", "TidesDB", "RocksDB", "RocksDB"} {
		if tasks[i].Engine != e {
			t.Errorf("task %d engine %q, want %q", i+1, tasks[i].Engine, e)
		}
	}
}

func TestShippedTaskFiles(t *testing.T) {
	seed, err := LoadConfig(filepath.Join("..", "..", "iibench", "seed.toml"))
	if err != nil {
		t.Fatal(err)
	}
	verbatim, _ := ParseConfig(seedQueue)
	if !reflect.DeepEqual(seed, verbatim) {
		t.Errorf("seed.toml differs from the seed's queue")
	}
	quick, err := LoadConfig(filepath.Join("..", "..", "iibench", "quick.toml"))
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]int{}
	var planned time.Duration
	for _, q := range quick {
		engines[q.Engine+"/"+q.Phase()]++
		planned += q.Duration
	}
	if len(quick) != 6 || len(engines) != 6 || planned > 5*time.Minute {
		t.Errorf("quick.toml: %d tasks, %v, %v planned", len(quick), engines, planned)
	}
	// The PGO training queue (build_plugin.sh --pgo): TidesDB only, a load
	// then a mixed phase, well under a minute.
	train, err := LoadConfig(filepath.Join("..", "..", "iibench", "train.toml"))
	if err != nil {
		t.Fatal(err)
	}
	planned = 0
	for _, q := range train {
		planned += q.Duration
		if q.Engine != "TidesDB" {
			t.Errorf("train.toml: task %s on %s, want TidesDB only", q.Name, q.Engine)
		}
	}
	if len(train) != 2 || train[0].Phase() == train[1].Phase() || planned > time.Minute {
		t.Errorf("train.toml: %d tasks, %v planned", len(train), planned)
	}
}

// with replaces line `key = ...` of task n (1-based) or adds it.
func with(n int, line string) string {
	parts := strings.Split(seedQueue, "[[task]]\n")
	key := strings.SplitN(line, " =", 2)[0]
	var kept []string
	for _, l := range strings.Split(parts[n], "\n") {
		if !strings.HasPrefix(l, key+" =") {
			kept = append(kept, l)
		}
	}
	if !strings.HasSuffix(line, "=") {
		kept = append([]string{line}, kept...)
	}
	parts[n] = strings.Join(kept, "\n")
	return strings.Join(parts, "[[task]]\n")
}

func TestBadQueuesNameKeyAndTask(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{with(2, `writers = 8`), []string{`task 2 ("innodb_mixed_15m")`, `unknown key "writers"`}},
		{strings.Replace(seedQueue, "query_limit = 10", "query_limt = 10", 1), []string{"[defaults]", `"query_limt"`}},
		{"[default]\nx = 1\n" + seedQueue, []string{`"default`}},
		{with(3, `writer_threads = -4`), []string{`task 3 ("tidesdb_load_30M")`, `"writer_threads"`, "-4"}},
		{with(4, `query_threads = -1`), []string{`task 4 ("tidesdb_mixed_15m")`, `"query_threads"`}},
		{with(2, `duration = "15 minutes"`), []string{`task 2 ("innodb_mixed_15m")`, `"duration"`, "15 minutes"}},
		{with(2, `report_every = "10x"`), []string{`task 2`, `"report_every"`}},
		{with(5, `table =`), []string{`task 5 ("rocksdb_load_30M")`, `"table"`, "missing"}},
		{strings.Replace(seedQueue, `driver = "mariadb"`, `driver = "postgres"`, 1), []string{"[defaults]", `task 1 ("innodb_load_30M")`, `"driver"`, "postgres"}},
		{with(6, `dialect = "sqlite"`), []string{`task 6 ("rocksdb_mixed_15m")`, `"dialect"`}},
		{with(1, `num_secondary_indexes = 4`), []string{`task 1`, `"num_secondary_indexes"`, "0..3"}},
		{with(1, `percent_compressible = 101`), []string{`task 1`, `"percent_compressible"`}},
		{with(1, `rows_per_insert = 0`), []string{`task 1`, `"rows_per_insert"`}},
		{with(1, `rows_per_insert = 20000`), []string{`task 1`, `"rows_per_insert"`, "65535"}},
		{with(2, `queries_per_second = -3`), []string{`task 2`, `"queries_per_second"`}},
		{with(2, `writer_threads = "eight"`), []string{`task 2 ("innodb_mixed_15m")`, "writer_threads"}},
		{with(2, `duration =`), []string{`task 2`, `"duration"`, "missing"}},
		{with(2, `name = "innodb_load_30M"`), []string{`task 2`, `"name"`, "task 1"}},
		{with(2, `log_file = "innodb_load.tsv"`), []string{`task 2`, `"log_file"`}},
		{with(1, `log_file = "../x.tsv"`), []string{`task 1`, `"log_file"`}},
		{with(1, `table = "a; DROP"`), []string{`task 1`, `"table"`}},
		{with(1, `dsn = "no database here"`), []string{`task 1`, `"dsn"`}},
		{"[defaults]\nwriter_threads = 1\n", []string{"no [[task]]"}},
	} {
		_, err := ParseConfig(c.text)
		if err == nil {
			t.Errorf("accepted, want an error with %q", c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	}
}

func TestEngineOf(t *testing.T) {
	for in, want := range map[string]string{"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4": "InnoDB", "engine = tidesdb": "TidesDB",
		"DEFAULT CHARSET=utf8mb4 ENGINE=RocksDB": "RocksDB", "ENGINE=MyRocks": "RocksDB", "ENGINE=Aria": "Aria", "": "", "ROW_FORMAT=DYNAMIC": ""} {
		if got := EngineOf(in); got != want {
			t.Errorf("EngineOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadConfigNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.toml")
	os.WriteFile(p, []byte(with(1, "bogus = 1")), 0o644)
	if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("error %v", err)
	}
}
