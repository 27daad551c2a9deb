// config.go reads sqlbench's configuration from the environment, with the
// seed's variable names (TABLE_SIZES, TABLES, THREAD_COUNTS, TIME, WARMUP,
// ENGINES, WORKLOADS, ITERATIONS, TIDESDB_SYNC_MODE, TIDESDB_COMPRESSION,
// INNODB_COMPRESSION, TIDESDB_BLOCK_CACHE, INNODB_BUFFER_POOL,
// INNODB_FLUSH) on top of a named size preset (PRESET=quick|seed) and the
// suite's durability and memory presets (DURABILITY, MEMORY, MEM_LIMIT);
// MALLOC names the servers' allocator (glibc, jemalloc, mimalloc,
// tcmalloc: LD_PRELOAD).
//
// TARGET=host:port[,user=U][,password=P] (or a socket path) measures an
// external, already running server instead (external.go): sqlbench
// neither starts, configures nor stops it; ENGINE is the engine sysbench
// creates its tables with, LABEL the server's name in the reports, and
// NO_PREPARE=1 uses tables that already exist (created and sharded by
// someone else) instead of preparing them.
package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"tidesql/bench/internal/server"
	"tidesql/bench/internal/target"
)

// Config is one sweep.
type Config struct {
	SizePreset  string // quick | seed
	TableSizes  []int
	Tables      int
	Threads     []int
	Time        int // seconds measured per run
	Warmup      int // seconds run and discarded before each run
	Engines     []string
	Workloads   []string
	Iterations  int
	Preset      server.Preset
	Cnf         string // a my.cnf included after the preset
	Malloc      string // the servers' allocator (server.Allocators)
	Out         string
	ServerDir   string
	Port        int
	Sysbench    string
	Interval    int // sysbench --report-interval, seconds
	NoCharts    bool
	StopOnError bool
	// External is the already running server measured with TARGET (nil:
	// sqlbench starts a server per engine). Engines is then [Label].
	External    *target.Target
	TableEngine string // ENGINE: the engine of the tables on External
	Label       string // LABEL: External's name in the reports
	NoPrepare   bool   // NO_PREPARE: External's tables exist already
}

// Workloads sqlbench knows: sysbench's bundled OLTP scripts.
var knownWorkloads = map[string]bool{
	"oltp_read_write": true, "oltp_read_only": true, "oltp_write_only": true, "oltp_point_select": true,
	"oltp_insert": true, "oltp_update_index": true, "oltp_update_non_index": true, "oltp_delete": true,
	"select_random_points": true, "select_random_ranges": true,
}

// sizePresets are the quick default and the seed article's parameters.
var sizePresets = map[string]map[string]string{
	"quick": {"TABLE_SIZES": "50000", "TABLES": "4", "THREAD_COUNTS": "1 8", "TIME": "10", "WARMUP": "2",
		"ITERATIONS": "1"},
	"seed": {"TABLE_SIZES": "1000000", "TABLES": "8", "THREAD_COUNTS": "1 8 16 32", "TIME": "300", "WARMUP": "120",
		"ITERATIONS": "1", "TIDESDB_COMPRESSION": "LZ4", "INNODB_COMPRESSION": "LZ4",
		"TIDESDB_BLOCK_CACHE": "2G", "INNODB_BUFFER_POOL": "2G", "ROCKSDB_BLOCK_CACHE": "2G"},
}

// LoadConfig builds the configuration from getenv (os.Getenv in main).
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{SizePreset: "quick", Port: 3430, Sysbench: "sysbench", Interval: 1}
	if v := getenv("PRESET"); v != "" {
		c.SizePreset = strings.ToLower(v)
	}
	defs, ok := sizePresets[c.SizePreset]
	if !ok {
		return c, fmt.Errorf("PRESET=%q: want quick or seed", c.SizePreset)
	}
	get := func(k string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return defs[k]
	}
	var err error
	if c.TableSizes, err = intList("TABLE_SIZES", get("TABLE_SIZES"), 1); err != nil {
		return c, err
	}
	if c.Threads, err = intList("THREAD_COUNTS", get("THREAD_COUNTS"), 1); err != nil {
		return c, err
	}
	for _, x := range []struct {
		key string
		dst *int
		min int
	}{{"TABLES", &c.Tables, 1}, {"TIME", &c.Time, 1}, {"WARMUP", &c.Warmup, 0}, {"ITERATIONS", &c.Iterations, 1}} {
		if *x.dst, err = oneInt(x.key, get(x.key), x.min); err != nil {
			return c, err
		}
	}
	eng := get("ENGINES")
	if eng == "" {
		eng = strings.Join(server.Engines, " ")
	}
	if c.Engines, err = server.ParseEngines(eng); err != nil {
		return c, fmt.Errorf("ENGINES=%q: %w", eng, err)
	}
	wl := get("WORKLOADS")
	if wl == "" {
		wl = "oltp_read_write oltp_point_select oltp_insert oltp_write_only"
	}
	for _, w := range strings.FieldsFunc(wl, func(r rune) bool { return r == ' ' || r == ',' }) {
		if !knownWorkloads[w] {
			return c, fmt.Errorf("WORKLOADS: unknown workload %q (want sysbench OLTP scripts: %s)", w, strings.Join(sortedWorkloads(), ", "))
		}
		c.Workloads = append(c.Workloads, w)
	}

	p := server.DefaultPreset()
	if v := getenv("DURABILITY"); v != "" {
		p.Durability = v
	}
	if v := getenv("MEMORY"); v != "" {
		p.Memory = v
	}
	for _, x := range []struct {
		key string
		dst *int64
	}{{"TIDESDB_BLOCK_CACHE", &p.TidesDBCache}, {"INNODB_BUFFER_POOL", &p.InnoDBCache},
		{"ROCKSDB_BLOCK_CACHE", &p.RocksDBCache}, {"MEM_LIMIT", &p.MemLimit}, {"ROCKSDB_MEM_LIMIT", &p.RocksDBMemLimit}} {
		if v := get(x.key); v != "" {
			if *x.dst, err = server.ParseBytes(v); err != nil {
				return c, fmt.Errorf("%s=%q: %w", x.key, v, err)
			}
		}
	}
	// A seed-size cache needs a limit that holds it: grow the default
	// limit with the largest cache unless the user gave one.
	if getenv("MEM_LIMIT") == "" && p.Memory == server.Equal {
		big := p.TidesDBCache
		if p.InnoDBCache > big {
			big = p.InnoDBCache
		}
		if p.RocksDBCache > big {
			big = p.RocksDBCache
		}
		if need := 2*big + 2*p.WriteBuffer + 256<<20; need > p.MemLimit {
			p.MemLimit = need
		}
	}
	if p.Memory == server.Seed {
		p.MemLimit = 0
	}
	if v := get("TIDESDB_COMPRESSION"); v != "" {
		p.TidesDBCompression = strings.ToUpper(v)
	}
	if v := get("INNODB_COMPRESSION"); v != "" {
		p.InnoDBCompression = strings.ToUpper(v)
	}
	if v := get("ROCKSDB_COMPRESSION"); v != "" {
		p.RocksDBCompression = strings.ToUpper(v)
	} else {
		p.RocksDBCompression = p.TidesDBCompression // aligned with TidesDB unless given
	}
	if v := get("TIDESDB_SYNC_MODE"); v != "" {
		if p.TidesDBSync, err = syncMode(v); err != nil {
			return c, err
		}
	}
	p.InnoDBFlush = get("INNODB_FLUSH")
	p.RocksDBFlush = get("ROCKSDB_FLUSH")
	if err := p.Validate(); err != nil {
		return c, err
	}
	c.Preset = p

	if c.Malloc, err = server.ParseMalloc(getenv("MALLOC")); err != nil {
		return c, fmt.Errorf("MALLOC: %w", err)
	}
	c.Cnf, c.Out, c.ServerDir = getenv("CNF"), getenv("OUT"), getenv("SERVER_DIR")
	if v := getenv("SYSBENCH"); v != "" {
		c.Sysbench = v
	}
	if v := getenv("PORT"); v != "" {
		if c.Port, err = oneInt("PORT", v, 1024); err != nil {
			return c, err
		}
	}
	if v := getenv("REPORT_INTERVAL"); v != "" {
		if c.Interval, err = oneInt("REPORT_INTERVAL", v, 1); err != nil {
			return c, err
		}
	}
	c.NoCharts = truthy(getenv("NO_CHARTS"))
	c.StopOnError = truthy(getenv("STOP_ON_ERROR"))
	return c, loadExternal(&c, getenv)
}

// syncMode maps the seed's numbers (0 NONE, 1 INTERVAL, 2 FULL) and names.
func syncMode(v string) (string, error) {
	switch strings.ToUpper(v) {
	case "0", "NONE":
		return "NONE", nil
	case "1", "INTERVAL":
		return "INTERVAL", nil
	case "2", "FULL":
		return "FULL", nil
	}
	return "", fmt.Errorf("TIDESDB_SYNC_MODE=%q: want 0 (NONE), 1 (INTERVAL) or 2 (FULL)", v)
}

func oneInt(key, v string, min int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < min {
		return 0, fmt.Errorf("%s=%q: want a whole number >= %d", key, v, min)
	}
	return n, nil
}

func intList(key, v string, min int) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' }) {
		n, err := oneInt(key, f, min)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %q is not a whole number >= %d", key, v, f, min)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", key)
	}
	return out, nil
}

func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "1", "yes", "true", "on":
		return true
	}
	return false
}

func sortedWorkloads() []string {
	var l []string
	for w := range knownWorkloads {
		l = append(l, w)
	}
	sort.Strings(l)
	return l
}

// Lines describe the sweep, printed with the results.
func (c Config) Lines() []string {
	if c.External != nil {
		return c.externalLines()
	}
	return append([]string{
		fmt.Sprintf("size preset: %s; tables %d x %s rows; threads %s; %d s per run after %d s warm-up; %d iteration(s)",
			c.SizePreset, c.Tables, joinInts(c.TableSizes), joinInts(c.Threads), c.Time, c.Warmup, c.Iterations),
		"engines: " + strings.Join(c.Engines, ", ") + "; workloads: " + strings.Join(c.Workloads, ", "),
		"allocator (MALLOC): " + server.MallocSummary(c.Malloc),
	}, c.Preset.Summary()...)
}

// Planned is the sweep's planned duration in seconds (prepare estimated).
func (c Config) Planned() int {
	runs := len(c.Workloads) * len(c.Threads) * c.Iterations * (c.Time + c.Warmup + 1)
	total := 0
	for _, s := range c.TableSizes {
		prep := 10 + c.Tables*s/40000 // about 40k rows/s on 2 cores
		total += len(c.Engines) * (prep + runs)
	}
	return total
}

func joinInts(l []int) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, " ")
}
