// config.go reads the iibench task queue: a TOML file with a [defaults]
// table and [[task]] entries, in the format of the seed article
// (tools/sql/iibench/seed.toml). Every task key may also appear in
// [defaults]; a task's own value wins. Unknown keys and bad values are
// errors that name the key and the task.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/go-sql-driver/mysql"

	"tidesql/bench/internal/server"
)

// rawTask is one [[task]] (or the [defaults] table) as written: a nil
// field was not given.
type rawTask struct {
	Name                *string  `toml:"name"`
	Driver              *string  `toml:"driver"`
	Dialect             *string  `toml:"dialect"`
	DSN                 *string  `toml:"dsn"`
	NumSecondaryIndexes *int64   `toml:"num_secondary_indexes"`
	NumCharFields       *int64   `toml:"num_char_fields"`
	LengthCharFields    *int64   `toml:"length_char_fields"`
	PercentCompressible *int64   `toml:"percent_compressible"`
	RowsPerInsert       *int64   `toml:"rows_per_insert"`
	ReportEvery         *string  `toml:"report_every"`
	QueryLimit          *int64   `toml:"query_limit"`
	WriterThreads       *int64   `toml:"writer_threads"`
	Table               *string  `toml:"table"`
	CreateTable         *bool    `toml:"create_table"`
	TableOptions        *string  `toml:"table_options"`
	Duration            *string  `toml:"duration"`
	MaxRowsTotal        *int64   `toml:"max_rows_total"`
	LogFile             *string  `toml:"log_file"`
	MaxRowsPerSecond    *int64   `toml:"max_rows_per_second"`
	QueryThreads        *int64   `toml:"query_threads"`
	QueriesPerSecond    *float64 `toml:"queries_per_second"`
	QueryStartAtRows    *int64   `toml:"query_start_at_rows"`
}

// Task is one validated task of the queue.
type Task struct {
	Index               int // 1-based position in the file
	Name                string
	Driver, Dialect     string
	DSN                 string
	NumSecondaryIndexes int
	NumCharFields       int
	LengthCharFields    int
	PercentCompressible int
	RowsPerInsert       int
	ReportEvery         time.Duration
	QueryLimit          int
	WriterThreads       int
	Table               string
	CreateTable         bool
	TableOptions        string
	Duration            time.Duration // 0 = no time limit
	MaxRowsTotal        int64         // 0 = no row limit
	LogFile             string
	MaxRowsPerSecond    int64 // 0 = uncapped
	QueryThreads        int
	QueriesPerSecond    float64 // 0 = as fast as the threads go
	QueryStartAtRows    int64
	// Engine named by ENGINE= in table_options, or inherited from the
	// latest earlier task on the same table; "" when neither says.
	Engine string
}

// Phase is "mixed" for a task with query threads, else "load".
func (t Task) Phase() string {
	if t.QueryThreads > 0 {
		return "mixed"
	}
	return "load"
}

// Label names the task in messages: task 2 ("innodb_mixed_15m").
func (t Task) Label() string { return label(t.Index, t.Name) }

func label(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("task %d", i)
	}
	return fmt.Sprintf("task %d (%q)", i, name)
}

// builtin values for keys neither the task nor [defaults] gives.
var builtin = rawTask{
	Driver: ptr("mariadb"), Dialect: ptr("mariadb"),
	NumSecondaryIndexes: ptr[int64](3), NumCharFields: ptr[int64](4), LengthCharFields: ptr[int64](100),
	PercentCompressible: ptr[int64](30), RowsPerInsert: ptr[int64](1000), ReportEvery: ptr("10s"),
	QueryLimit: ptr[int64](10), WriterThreads: ptr[int64](1), CreateTable: ptr(false), TableOptions: ptr(""),
	MaxRowsTotal: ptr[int64](0), MaxRowsPerSecond: ptr[int64](0), QueryThreads: ptr[int64](0),
	QueriesPerSecond: ptr(0.0), QueryStartAtRows: ptr[int64](0),
}

func ptr[T any](v T) *T { return &v }

// LoadConfig reads and validates a task file.
func LoadConfig(path string) ([]Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tasks, err := ParseConfig(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tasks, nil
}

// ParseConfig parses and validates the text of a task file.
func ParseConfig(text string) ([]Task, error) {
	var file struct {
		Defaults toml.Primitive   `toml:"defaults"`
		Task     []toml.Primitive `toml:"task"`
	}
	md, err := toml.Decode(text, &file)
	if err != nil {
		return nil, err
	}
	var defs rawTask
	if md.IsDefined("defaults") {
		if err := md.PrimitiveDecode(file.Defaults, &defs); err != nil {
			return nil, fmt.Errorf("[defaults]: %w", err)
		}
		if defs.Name != nil {
			return nil, fmt.Errorf("[defaults]: key \"name\" belongs in a [[task]], not in [defaults]")
		}
	}
	raws := make([]rawTask, len(file.Task))
	for i, p := range file.Task {
		var n struct {
			Name *string `toml:"name"`
		}
		if err := md.PrimitiveDecode(p, &n); err != nil {
			return nil, fmt.Errorf("%s: key \"name\": %w", label(i+1, ""), err)
		}
		if n.Name != nil {
			raws[i].Name = n.Name
		}
		if err := md.PrimitiveDecode(p, &raws[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", label(i+1, deref(raws[i].Name)), err)
		}
	}
	if err := unknownKeys(text, md.Undecoded(), raws); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("no [[task]] entries: the queue is empty")
	}
	var tasks []Task
	names := map[string]int{}
	logs := map[string]int{}
	for i, r := range raws {
		t, err := resolve(i+1, r, defs)
		if err != nil {
			return nil, err
		}
		if j, ok := names[t.Name]; ok {
			return nil, fmt.Errorf("%s: key \"name\": %q is also the name of task %d", t.Label(), t.Name, j)
		}
		names[t.Name] = t.Index
		if j, ok := logs[t.LogFile]; ok {
			return nil, fmt.Errorf("%s: key \"log_file\": %q is also the log of task %d", t.Label(), t.LogFile, j)
		}
		logs[t.LogFile] = t.Index
		if t.Engine == "" {
			for k := len(tasks) - 1; k >= 0; k-- {
				if tasks[k].Table == t.Table && tasks[k].Engine != "" {
					t.Engine = tasks[k].Engine
					break
				}
			}
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// unknownKeys turns the keys no field took into an error naming each
// key and the task (or table) holding it.
func unknownKeys(text string, undecoded []toml.Key, raws []rawTask) error {
	if len(undecoded) == 0 {
		return nil
	}
	var doc map[string]any
	_, _ = toml.Decode(text, &doc)
	var msgs []string
	seen := map[string]bool{}
	for _, k := range undecoded {
		if seen[k.String()] || (len(k) > 1 && k[0] != "task" && k[0] != "defaults" && seen[k[0]]) {
			continue // reported already, or under an unknown table reported already
		}
		seen[k.String()] = true
		switch {
		case len(k) >= 2 && k[0] == "task":
			list, _ := doc["task"].([]map[string]any)
			for i, m := range list {
				if _, ok := m[k[1]]; ok {
					msgs = append(msgs, fmt.Sprintf("%s: unknown key %q", label(i+1, deref(raws[i].Name)), k[1]))
				}
			}
		case len(k) >= 2 && k[0] == "defaults":
			msgs = append(msgs, fmt.Sprintf("[defaults]: unknown key %q", k[1]))
		default:
			msgs = append(msgs, fmt.Sprintf("unknown top-level key or table %q (want [defaults] and [[task]])", k.String()))
		}
	}
	return fmt.Errorf("%s (known keys: %s)", strings.Join(msgs, "; "), strings.Join(knownKeys(), ", "))
}

func knownKeys() []string {
	return []string{"name", "driver", "dialect", "dsn", "num_secondary_indexes", "num_char_fields", "length_char_fields",
		"percent_compressible", "rows_per_insert", "report_every", "query_limit", "writer_threads", "table",
		"create_table", "table_options", "duration", "max_rows_total", "log_file", "max_rows_per_second",
		"query_threads", "queries_per_second", "query_start_at_rows"}
}

var (
	identRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	engineRE = regexp.MustCompile(`(?i)\bENGINE\s*=?\s*([A-Za-z_]+)`)
)

// EngineOf returns the engine named in table options ("" if none), in
// the ENGINE= spelling for the engines the harness knows (myrocks ->
// RocksDB), else as written (a plain client may test any engine; only
// --server insists on a known one).
func EngineOf(options string) string {
	m := engineRE.FindStringSubmatch(options)
	if m == nil {
		return ""
	}
	if e, err := server.CanonicalEngine(m[1]); err == nil {
		return e
	}
	return m[1]
}

// resolve merges a task over the defaults and the built-in values, and
// checks every value.
func resolve(idx int, r, defs rawTask) (Task, error) {
	name := deref(r.Name)
	lbl := label(idx, name)
	bad := func(key string, fromDefaults bool, format string, a ...any) error {
		where := lbl
		if fromDefaults {
			where = "[defaults] (used by " + lbl + ")"
		}
		return fmt.Errorf("%s: key %q: %s", where, key, fmt.Sprintf(format, a...))
	}
	// pick returns the task's value, else the default's, else the built-in
	// one, and whether it came from [defaults].
	str := func(t, d, b *string) (string, bool, bool) {
		switch {
		case t != nil:
			return *t, false, true
		case d != nil:
			return *d, true, true
		case b != nil:
			return *b, false, true
		}
		return "", false, false
	}
	num := func(key string, t, d, b *int64, lo, hi int64) (int64, error) {
		v, fromD := *b, false
		if t != nil {
			v = *t
		} else if d != nil {
			v, fromD = *d, true
		}
		if v < lo || v > hi {
			if hi == 1<<62 {
				return 0, bad(key, fromD, "%d must be >= %d", v, lo)
			}
			return 0, bad(key, fromD, "%d out of range %d..%d", v, lo, hi)
		}
		return v, nil
	}
	dur := func(key string, t, d *string, need bool) (time.Duration, error) {
		s, fromD, ok := str(t, d, nil)
		if !ok {
			return 0, nil
		}
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, bad(key, fromD, "%q is not a duration (want e.g. \"10s\", \"20m\", \"1h30m\")", s)
		}
		if v <= 0 && need {
			return 0, bad(key, fromD, "%q must be positive", s)
		}
		if v < 0 {
			return 0, bad(key, fromD, "%q must not be negative", s)
		}
		return v, nil
	}
	const inf = int64(1 << 62)
	t := Task{Index: idx, Name: name}
	if name == "" {
		return t, fmt.Errorf("%s: key \"name\" is missing (every task needs a unique name)", lbl)
	}
	if !identRE.MatchString(strings.ReplaceAll(name, "-", "_")) {
		return t, bad("name", false, "%q: use letters, digits, _ and - only", name)
	}
	for _, k := range []struct {
		key     string
		t, d, b *string
		dst     *string
	}{{"driver", r.Driver, defs.Driver, builtin.Driver, &t.Driver}, {"dialect", r.Dialect, defs.Dialect, builtin.Dialect, &t.Dialect}} {
		v, fromD, _ := str(k.t, k.d, k.b)
		if v != "mariadb" && v != "mysql" {
			return t, bad(k.key, fromD, "%q is not supported (want \"mariadb\" or \"mysql\")", v)
		}
		*k.dst = v
	}
	dsn, fromD, ok := str(r.DSN, defs.DSN, nil)
	if !ok || dsn == "" {
		return t, bad("dsn", false, "missing (e.g. \"user:pass@unix(/tmp/mariadb.sock)/iibench\")")
	}
	if cfg, err := mysql.ParseDSN(dsn); err != nil {
		return t, bad("dsn", fromD, "%q: %v", dsn, err)
	} else if cfg.DBName == "" {
		return t, bad("dsn", fromD, "%q names no database (end it with /dbname)", dsn)
	}
	t.DSN = dsn
	var err error
	var v int64
	ints := []struct {
		key     string
		t, d, b *int64
		lo, hi  int64
		dst     *int
	}{
		{"num_secondary_indexes", r.NumSecondaryIndexes, defs.NumSecondaryIndexes, builtin.NumSecondaryIndexes, 0, 3, &t.NumSecondaryIndexes},
		{"num_char_fields", r.NumCharFields, defs.NumCharFields, builtin.NumCharFields, 0, 64, &t.NumCharFields},
		{"length_char_fields", r.LengthCharFields, defs.LengthCharFields, builtin.LengthCharFields, 1, 4096, &t.LengthCharFields},
		{"percent_compressible", r.PercentCompressible, defs.PercentCompressible, builtin.PercentCompressible, 0, 100, &t.PercentCompressible},
		{"rows_per_insert", r.RowsPerInsert, defs.RowsPerInsert, builtin.RowsPerInsert, 1, 100000, &t.RowsPerInsert},
		{"query_limit", r.QueryLimit, defs.QueryLimit, builtin.QueryLimit, 1, 1000000, &t.QueryLimit},
		{"writer_threads", r.WriterThreads, defs.WriterThreads, builtin.WriterThreads, 0, 1024, &t.WriterThreads},
		{"query_threads", r.QueryThreads, defs.QueryThreads, builtin.QueryThreads, 0, 1024, &t.QueryThreads},
	}
	for _, k := range ints {
		if v, err = num(k.key, k.t, k.d, k.b, k.lo, k.hi); err != nil {
			return t, err
		}
		*k.dst = int(v)
	}
	if t.MaxRowsTotal, err = num("max_rows_total", r.MaxRowsTotal, defs.MaxRowsTotal, builtin.MaxRowsTotal, 0, inf); err != nil {
		return t, err
	}
	if t.MaxRowsPerSecond, err = num("max_rows_per_second", r.MaxRowsPerSecond, defs.MaxRowsPerSecond, builtin.MaxRowsPerSecond, 0, inf); err != nil {
		return t, err
	}
	if t.QueryStartAtRows, err = num("query_start_at_rows", r.QueryStartAtRows, defs.QueryStartAtRows, builtin.QueryStartAtRows, 0, inf); err != nil {
		return t, err
	}
	qps, fromD := *builtin.QueriesPerSecond, false
	if r.QueriesPerSecond != nil {
		qps = *r.QueriesPerSecond
	} else if defs.QueriesPerSecond != nil {
		qps, fromD = *defs.QueriesPerSecond, true
	}
	if qps < 0 || qps != qps {
		return t, bad("queries_per_second", fromD, "%v must be >= 0 (0 = as fast as the threads go)", qps)
	}
	t.QueriesPerSecond = qps
	if cols := 5 + t.NumCharFields; t.RowsPerInsert*cols > 65535 {
		return t, bad("rows_per_insert", false, "%d rows of %d columns need %d placeholders; a prepared statement takes at most 65535",
			t.RowsPerInsert, cols, t.RowsPerInsert*cols)
	}
	if t.ReportEvery, err = dur("report_every", r.ReportEvery, defs.ReportEvery, true); err != nil {
		return t, err
	}
	if t.ReportEvery == 0 {
		t.ReportEvery = 10 * time.Second
	}
	if t.ReportEvery < 100*time.Millisecond {
		return t, bad("report_every", r.ReportEvery == nil, "%v is below 100ms", t.ReportEvery)
	}
	if t.Duration, err = dur("duration", r.Duration, defs.Duration, true); err != nil {
		return t, err
	}
	table, fromD, _ := str(r.Table, defs.Table, nil)
	if table == "" {
		return t, bad("table", false, "missing (the table this task writes, e.g. \"purchases_innodb\")")
	}
	if !identRE.MatchString(table) {
		return t, bad("table", fromD, "%q is not a plain table name (letters, digits, _)", table)
	}
	t.Table = table
	t.CreateTable = *builtin.CreateTable
	if r.CreateTable != nil {
		t.CreateTable = *r.CreateTable
	} else if defs.CreateTable != nil {
		t.CreateTable = *defs.CreateTable
	}
	t.TableOptions, fromD, _ = str(r.TableOptions, defs.TableOptions, builtin.TableOptions)
	if strings.ContainsAny(t.TableOptions, ";`") {
		return t, bad("table_options", fromD, "%q: no ; or ` allowed", t.TableOptions)
	}
	t.Engine = EngineOf(t.TableOptions)
	logFile, fromD, _ := str(r.LogFile, defs.LogFile, nil)
	if logFile == "" {
		logFile = name + ".tsv"
	}
	if strings.HasPrefix(logFile, "/") || strings.Contains(logFile, "..") {
		return t, bad("log_file", fromD, "%q must be a relative path inside --out", logFile)
	}
	t.LogFile = logFile
	if t.WriterThreads == 0 && t.QueryThreads == 0 {
		return t, bad("writer_threads", false, "0 writers and 0 query threads: the task would do nothing")
	}
	if t.Duration == 0 && (t.MaxRowsTotal == 0 || t.WriterThreads == 0) {
		return t, bad("duration", false, "missing: give duration (or max_rows_total with writer_threads > 0) so the task ends")
	}
	if t.MaxRowsPerSecond > 0 && t.WriterThreads > 0 && t.MaxRowsPerSecond < int64(t.WriterThreads) {
		return t, bad("max_rows_per_second", false, "%d is below one row per second per writer (%d writers)", t.MaxRowsPerSecond, t.WriterThreads)
	}
	if t.QueryThreads > 0 && t.QueriesPerSecond > 0 && t.QueriesPerSecond < 0.01*float64(t.QueryThreads) {
		return t, bad("queries_per_second", false, "%v is too low for %d query threads", t.QueriesPerSecond, t.QueryThreads)
	}
	return t, nil
}
