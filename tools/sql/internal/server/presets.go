// Package server runs throw-away MariaDB servers for the SQL benchmarks:
// one server per engine under test, configured from named presets, with
// an optional memory limit (cgroup) that counts the page cache.
//
// Invariants
//  1. Every engine's settings come from one Preset, so the engines of a run
//     are configured alike; what differs from the server's defaults is
//     written next to the results (Settings).
//  2. A started Server is registered until Stop returns: an interrupted
//     harness stops every registered server (StopAll), so no mariadbd is
//     left running.
//  3. A server never touches the system server's files: its data
//     directory, socket and pid file live under its own directory.
package server

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Engines the harnesses know, by the name ENGINE= takes.
var Engines = []string{"TidesDB", "InnoDB", "RocksDB"}

// CanonicalEngine maps a user's spelling (tidesdb, myrocks, rocksdb, ...)
// to the ENGINE= name, or returns an error naming the valid ones.
func CanonicalEngine(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "tidesdb":
		return "TidesDB", nil
	case "innodb":
		return "InnoDB", nil
	case "rocksdb", "myrocks":
		return "RocksDB", nil
	}
	return "", fmt.Errorf("unknown engine %q (want TidesDB, InnoDB or RocksDB)", s)
}

// ParseEngines splits a list separated by spaces or commas.
func ParseEngines(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		e, err := CanonicalEngine(f)
		if err != nil {
			return nil, err
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no engine given")
	}
	return out, nil
}

// Durability presets.
const (
	Relaxed = "relaxed" // what the seeds ran: no sync at commit
	Durable = "durable" // every commit synced on all engines
)

// Memory presets.
const (
	// Equal: each engine's server limited to the same memory, page cache
	// included (a memory cgroup), and every engine reads through the page
	// cache (InnoDB on buffered I/O): no engine is held to its own cache
	// while another uses the OS's. Without a cgroup, the page cache is
	// unlimited for all three (the run says so).
	Equal = "equal"
	// Seed: the seeds' setting: equal caches, InnoDB O_DIRECT (held to its
	// buffer pool), no limit: TidesDB and MyRocks also read through the OS
	// page cache. Flatters the LSM engines when data exceeds the caches.
	Seed = "seed"
)

// Preset is everything that configures the engines of one run.
type Preset struct {
	Durability string // Relaxed or Durable
	Memory     string // Equal or Seed
	// Caches in bytes: TidesDB block cache, InnoDB buffer pool, MyRocks
	// block cache. Equal unless the user overrides one.
	TidesDBCache, InnoDBCache, RocksDBCache int64
	// Write-side memory of each engine (TidesDB unified memtable, MyRocks
	// total memtable budget, InnoDB log buffer).
	WriteBuffer int64
	// Memory limit of each server for Equal (0 = no limit).
	MemLimit int64
	// MyRocks's own limit for Equal (0 = MemLimit). A larger one is a
	// concession to MyRocks, named in Summary: its server is OOM-killed
	// at limits the others run in (anon RSS 518 MiB at 512 MiB with
	// 64 MiB caches, TPC-C 8 warehouses).
	RocksDBMemLimit int64
	// Compression per engine: NONE, LZ4, ZSTD, SNAPPY (InnoDB: page
	// compression, NONE, LZ4 or SNAPPY, through the server's provider
	// plugin of that algorithm).
	TidesDBCompression, InnoDBCompression, RocksDBCompression string
	// Per-engine overrides of the durability preset ("" = from preset):
	// TidesDB sync mode NONE|INTERVAL|FULL, InnoDB and MyRocks
	// flush_log_at_trx_commit 0|1|2.
	TidesDBSync, InnoDBFlush, RocksDBFlush string
	// Server isolation level (READ-COMMITTED, REPEATABLE-READ, ...).
	Isolation string
	// Background threads per engine (flush + compaction for the LSMs,
	// I/O threads for InnoDB).
	BackgroundThreads int
	// Extra my.cnf lines appended last (user overrides).
	Extra []string
}

// DefaultPreset is the quick default: relaxed durability, equal memory,
// 256 MiB caches, no compression, 64 MiB write buffers, 1 GiB limit.
func DefaultPreset() Preset {
	return Preset{
		Durability: Relaxed, Memory: Equal,
		TidesDBCache: 256 << 20, InnoDBCache: 256 << 20, RocksDBCache: 256 << 20,
		WriteBuffer: 64 << 20, MemLimit: 1 << 30,
		TidesDBCompression: "NONE", InnoDBCompression: "NONE", RocksDBCompression: "NONE",
		Isolation: "READ-COMMITTED", BackgroundThreads: 2,
	}
}

// Validate checks the preset's names and values.
func (p Preset) Validate() error {
	if p.Durability != Relaxed && p.Durability != Durable {
		return fmt.Errorf("durability preset %q: want %s or %s", p.Durability, Relaxed, Durable)
	}
	if p.Memory != Equal && p.Memory != Seed {
		return fmt.Errorf("memory preset %q: want %s or %s", p.Memory, Equal, Seed)
	}
	for name, v := range map[string]int64{"TidesDB cache": p.TidesDBCache, "InnoDB buffer pool": p.InnoDBCache,
		"MyRocks cache": p.RocksDBCache, "write buffer": p.WriteBuffer} {
		if v < 8<<20 {
			return fmt.Errorf("%s of %d bytes is below 8 MiB", name, v)
		}
	}
	if p.Memory == Equal && p.MemLimit != 0 {
		need := max64(p.TidesDBCache, p.InnoDBCache, p.RocksDBCache) + 2*p.WriteBuffer + 256<<20
		if p.MemLimit < need {
			return fmt.Errorf("memory limit %s is too small for caches of %s plus write buffers (want >= %s)",
				FormatBytes(p.MemLimit), FormatBytes(max64(p.TidesDBCache, p.InnoDBCache, p.RocksDBCache)), FormatBytes(need))
		}
	}
	if p.RocksDBMemLimit != 0 {
		if p.Memory != Equal || p.MemLimit == 0 {
			return fmt.Errorf("a MyRocks memory limit (%s) needs the equal memory preset with a limit for the others", FormatBytes(p.RocksDBMemLimit))
		}
		if p.RocksDBMemLimit < p.MemLimit {
			return fmt.Errorf("MyRocks memory limit %s is below the others' %s: it may only be raised",
				FormatBytes(p.RocksDBMemLimit), FormatBytes(p.MemLimit))
		}
	}
	for _, c := range []string{p.TidesDBCompression, p.InnoDBCompression, p.RocksDBCompression} {
		switch strings.ToUpper(c) {
		case "NONE", "LZ4", "ZSTD", "SNAPPY":
		default:
			return fmt.Errorf("compression %q: want NONE, LZ4, ZSTD or SNAPPY", c)
		}
	}
	if strings.ToUpper(p.InnoDBCompression) == "ZSTD" {
		return fmt.Errorf("InnoDB compression ZSTD: InnoDB has no zstd page compression; want NONE, LZ4 or SNAPPY")
	}
	if p.TidesDBSync != "" {
		switch strings.ToUpper(p.TidesDBSync) {
		case "NONE", "INTERVAL", "FULL":
		default:
			return fmt.Errorf("TidesDB sync mode %q: want NONE, INTERVAL or FULL (or 0, 1, 2)", p.TidesDBSync)
		}
	}
	for name, v := range map[string]string{"InnoDB flush_log_at_trx_commit": p.InnoDBFlush, "MyRocks flush_log_at_trx_commit": p.RocksDBFlush} {
		if v != "" && v != "0" && v != "1" && v != "2" {
			return fmt.Errorf("%s %q: want 0, 1 or 2", name, v)
		}
	}
	switch p.Isolation {
	case "READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE":
	default:
		return fmt.Errorf("isolation %q: want READ-COMMITTED, REPEATABLE-READ, SERIALIZABLE or READ-UNCOMMITTED", p.Isolation)
	}
	if p.BackgroundThreads < 1 || p.BackgroundThreads > 64 {
		return fmt.Errorf("background threads %d out of 1..64", p.BackgroundThreads)
	}
	return nil
}

// TidesDBSyncMode is the TidesDB sync mode the preset gives.
func (p Preset) TidesDBSyncMode() string {
	if p.TidesDBSync != "" {
		return strings.ToUpper(p.TidesDBSync)
	}
	if p.Durability == Durable {
		return "FULL"
	}
	return "NONE"
}

func (p Preset) flush(override string) string {
	if override != "" {
		return override
	}
	if p.Durability == Durable {
		return "1"
	}
	return "0"
}

// Name is the preset's label printed with every result, e.g.
// "relaxed/equal(1.0 GiB)" or "durable/seed"; "custom" marks per-engine
// durability overrides.
func (p Preset) Name() string {
	d := p.Durability
	if p.TidesDBSync != "" || p.InnoDBFlush != "" || p.RocksDBFlush != "" {
		d += "+custom"
	}
	m := p.Memory
	if p.Memory == Equal {
		if p.rocksRaised() {
			m += "(" + FormatBytes(p.MemLimit) + "; MyRocks " + FormatBytes(p.RocksDBMemLimit) + ")"
		} else if p.MemLimit > 0 {
			m += "(" + FormatBytes(p.MemLimit) + ")"
		} else {
			m += "(no limit)"
		}
	}
	return d + "/" + m
}

// rocksRaised: MyRocks's server runs under a larger limit than the others'.
func (p Preset) rocksRaised() bool {
	return p.Memory == Equal && p.MemLimit > 0 && p.RocksDBMemLimit > p.MemLimit
}

// LimitFor is the memory limit of engine's server (0 = none).
func (p Preset) LimitFor(engine string) int64 {
	if p.Memory != Equal {
		return 0
	}
	if engine == "RocksDB" && p.RocksDBMemLimit != 0 {
		return p.RocksDBMemLimit
	}
	return p.MemLimit
}

// TidesDBMemoryBound is tidesdb_max_memory_usage under the equal-memory
// preset: the block cache plus two write buffers (the active memtable and
// one being flushed), as InnoDB holds its pool and log buffer.
func (p Preset) TidesDBMemoryBound() int64 { return p.TidesDBCache + 2*p.WriteBuffer }

// CnfLines is the [mysqld] section the preset gives, for all engines
// (a server keeps the lines of the engine under test: Server.wants).
func (p Preset) CnfLines() []string {
	flushMethod := "O_DIRECT"
	if p.Memory == Equal {
		flushMethod = "fsync" // buffered: InnoDB may use the page cache too
	}
	tsync := p.TidesDBSyncMode()
	l := []string{
		"# --- server",
		"skip-log-bin",
		"max_connections = 1024",
		"max_prepared_stmt_count = 102400",
		"table_open_cache = 4096",
		"performance_schema = OFF",
		"transaction_isolation = " + p.Isolation,
		"character-set-server = utf8mb4",
		"collation-server = utf8mb4_general_ci",
		"# --- TidesDB",
		"tidesdb_block_cache_size = " + strconv.FormatInt(p.TidesDBCache, 10),
		"tidesdb_unified_memtable = ON",
		"tidesdb_unified_memtable_write_buffer_size = " + strconv.FormatInt(p.WriteBuffer, 10),
		"tidesdb_unified_memtable_sync_mode = " + tsync,
		"tidesdb_default_sync_mode = " + tsync,
		"tidesdb_default_compression = " + strings.ToUpper(p.TidesDBCompression),
		"tidesdb_flush_threads = " + strconv.Itoa(p.BackgroundThreads),
		"tidesdb_compaction_threads = " + strconv.Itoa(p.BackgroundThreads),
		"tidesdb_log_level = WARN",
	}
	if p.Memory == Equal {
		// The library's own bound (block cache + memtables), matched to what
		// the others hold: InnoDB its pool and log buffer, MyRocks its cache
		// and rocksdb_db_write_buffer_size. 0 would be half of the server's
		// cgroup limit, which leaves the SQL layer too little under a limit.
		l = append(l, "tidesdb_max_memory_usage = "+strconv.FormatInt(p.TidesDBMemoryBound(), 10))
	}
	l = append(l,
		"# --- InnoDB",
		"innodb_buffer_pool_size = "+strconv.FormatInt(p.InnoDBCache, 10),
		"innodb_log_buffer_size = "+strconv.FormatInt(p.WriteBuffer, 10),
		"innodb_log_file_size = "+strconv.FormatInt(4*p.WriteBuffer, 10),
		"innodb_flush_log_at_trx_commit = "+p.flush(p.InnoDBFlush),
		"innodb_flush_method = "+flushMethod,
		"innodb_read_io_threads = "+strconv.Itoa(p.BackgroundThreads),
		"innodb_write_io_threads = "+strconv.Itoa(p.BackgroundThreads),
	)
	if c := strings.ToUpper(p.InnoDBCompression); c != "NONE" {
		// LZ4 or SNAPPY (Validate): MariaDB reaches either only through its
		// provider plugin.
		l = append(l, "plugin_load_add = provider_"+strings.ToLower(c),
			"innodb_compression_algorithm = "+strings.ToLower(c), "innodb_compression_default = ON")
	}
	l = append(l,
		"# --- MyRocks",
		"rocksdb_block_cache_size = "+strconv.FormatInt(p.RocksDBCache, 10),
		"rocksdb_db_write_buffer_size = "+strconv.FormatInt(p.WriteBuffer, 10),
		"rocksdb_flush_log_at_trx_commit = "+p.flush(p.RocksDBFlush),
		"rocksdb_max_background_jobs = "+strconv.Itoa(2*p.BackgroundThreads),
		"rocksdb_default_cf_options = compression="+rocksCompression(p.RocksDBCompression),
	)
	if len(p.Extra) > 0 {
		l = append(l, "# --- user overrides")
		l = append(l, p.Extra...)
	}
	return l
}

func rocksCompression(c string) string {
	switch strings.ToUpper(c) {
	case "LZ4":
		return "kLZ4Compression"
	case "ZSTD":
		return "kZSTD"
	case "SNAPPY":
		return "kSnappyCompression"
	}
	return "kNoCompression"
}

// Summary is a few lines that describe the preset, printed with results.
func (p Preset) Summary() []string {
	mem := "each engine's server limited to " + FormatBytes(p.MemLimit) + " (page cache included); InnoDB on buffered I/O"
	if p.rocksRaised() {
		mem = "each engine's server limited to " + FormatBytes(p.MemLimit) + " (page cache included), MyRocks's to " +
			FormatBytes(p.RocksDBMemLimit) + " (it is OOM-killed at the others' limit); InnoDB on buffered I/O"
	}
	if p.Memory == Equal && p.MemLimit == 0 {
		mem = "no memory limit; InnoDB on buffered I/O so every engine reads through the page cache"
	}
	if p.Memory == Seed {
		mem = "no memory limit; InnoDB O_DIRECT (held to its buffer pool) while TidesDB and MyRocks read through the OS page cache (the seeds' setting)"
	}
	bound := ""
	if p.Memory == Equal {
		bound = "; TidesDB memory bound " + FormatBytes(p.TidesDBMemoryBound()) + " (cache + 2 write buffers)"
	}
	return []string{
		"preset: " + p.Name(),
		fmt.Sprintf("durability: TidesDB sync %s, InnoDB flush_log_at_trx_commit=%s, MyRocks flush_log_at_trx_commit=%s",
			p.TidesDBSyncMode(), p.flush(p.InnoDBFlush), p.flush(p.RocksDBFlush)),
		fmt.Sprintf("caches: TidesDB %s, InnoDB %s, MyRocks %s; write buffers %s each%s",
			FormatBytes(p.TidesDBCache), FormatBytes(p.InnoDBCache), FormatBytes(p.RocksDBCache), FormatBytes(p.WriteBuffer), bound),
		"memory: " + mem,
		fmt.Sprintf("compression: TidesDB %s, InnoDB %s, MyRocks %s; isolation %s",
			p.TidesDBCompression, p.InnoDBCompression, p.RocksDBCompression, p.Isolation),
	}
}

// ParseBytes reads "256M", "2G", "1073741824", "512k" (powers of 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(t, "B")
	t = strings.TrimSuffix(t, "I")
	mul := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mul, t = 1<<10, t[:n-1]
		case 'M':
			mul, t = 1<<20, t[:n-1]
		case 'G':
			mul, t = 1<<30, t[:n-1]
		case 'T':
			mul, t = 1<<40, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 256M, 2G or bytes)", s)
	}
	return int64(v * float64(mul)), nil
}

// FormatBytes prints 268435456 as "256 MiB".
func FormatBytes(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}

func max64(v ...int64) int64 {
	m := v[0]
	for _, x := range v[1:] {
		if x > m {
			m = x
		}
	}
	return m
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
