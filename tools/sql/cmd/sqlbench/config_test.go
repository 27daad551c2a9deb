package main

import (
	"reflect"
	"strings"
	"testing"

	"tidesql/bench/internal/server"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestQuickDefaults(t *testing.T) {
	c, err := LoadConfig(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tables != 4 || !reflect.DeepEqual(c.TableSizes, []int{50000}) || !reflect.DeepEqual(c.Threads, []int{1, 8}) ||
		c.Time != 10 || c.Warmup != 2 || c.Iterations != 1 {
		t.Errorf("quick preset %+v", c)
	}
	if !reflect.DeepEqual(c.Engines, []string{"TidesDB", "InnoDB", "RocksDB"}) {
		t.Errorf("engines %v", c.Engines)
	}
	if !reflect.DeepEqual(c.Workloads, []string{"oltp_read_write", "oltp_point_select", "oltp_insert", "oltp_write_only"}) {
		t.Errorf("workloads %v", c.Workloads)
	}
	if c.Preset.Durability != server.Relaxed || c.Preset.Memory != server.Equal || c.Preset.MemLimit != 1<<30 {
		t.Errorf("preset %+v", c.Preset)
	}
}

// ROCKSDB_MEM_LIMIT raises MyRocks's limit only; below MEM_LIMIT it is refused.
func TestRocksDBMemLimitEnv(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"MEM_LIMIT": "512M", "ROCKSDB_MEM_LIMIT": "768M",
		"TIDESDB_BLOCK_CACHE": "64M", "INNODB_BUFFER_POOL": "64M", "ROCKSDB_BLOCK_CACHE": "64M"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Preset.LimitFor("InnoDB") != 512<<20 || c.Preset.LimitFor("RocksDB") != 768<<20 {
		t.Errorf("limits %+v", c.Preset)
	}
	for _, env := range []map[string]string{{"MEM_LIMIT": "2G", "ROCKSDB_MEM_LIMIT": "1G"}, {"ROCKSDB_MEM_LIMIT": "many"}} {
		if _, err := LoadConfig(envOf(env)); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}

// The seed article's exact command line.
func TestSeedCommand(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"TABLE_SIZES": "1000000", "TABLES": "8", "THREAD_COUNTS": "1 8 16 32",
		"TIME": "300", "WARMUP": "120", "ENGINES": "TidesDB InnoDB",
		"WORKLOADS": "oltp_read_write oltp_point_select oltp_insert oltp_write_only", "TIDESDB_SYNC_MODE": "0",
		"ITERATIONS": "1", "TIDESDB_COMPRESSION": "LZ4", "INNODB_COMPRESSION": "LZ4",
		"TIDESDB_BLOCK_CACHE": "2147483648", "INNODB_BUFFER_POOL": "2G", "INNODB_FLUSH": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Preset
	if p.TidesDBCache != 2<<30 || p.InnoDBCache != 2<<30 || p.TidesDBSync != "NONE" || p.InnoDBFlush != "0" ||
		p.TidesDBCompression != "LZ4" || p.InnoDBCompression != "LZ4" || p.RocksDBCompression != "LZ4" {
		t.Errorf("preset %+v", p)
	}
	if p.MemLimit < 4<<30 {
		t.Errorf("memory limit %d does not hold two 2 GiB caches", p.MemLimit)
	}
	if !reflect.DeepEqual(c.Threads, []int{1, 8, 16, 32}) || c.Time != 300 || c.Warmup != 120 ||
		!reflect.DeepEqual(c.Engines, []string{"TidesDB", "InnoDB"}) {
		t.Errorf("sweep %+v", c)
	}
	s, err := LoadConfig(envOf(map[string]string{"PRESET": "seed", "MEMORY": "seed"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Tables != 8 || s.TableSizes[0] != 1000000 || s.Time != 300 || s.Preset.MemLimit != 0 {
		t.Errorf("PRESET=seed %+v", s)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	for k, v := range map[string]string{"TABLES": "0", "THREAD_COUNTS": "1 x", "TIME": "ten", "ENGINES": "MyISAM",
		"WORKLOADS": "oltp_everything", "TIDESDB_SYNC_MODE": "7", "INNODB_FLUSH": "5", "PRESET": "huge",
		"TIDESDB_BLOCK_CACHE": "lots", "DURABILITY": "maybe", "TABLE_SIZES": ""} {
		env := map[string]string{k: v}
		if k == "TABLE_SIZES" {
			env = map[string]string{k: " , "}
		}
		_, err := LoadConfig(envOf(env))
		if err == nil {
			t.Errorf("%s=%q accepted", k, v)
			continue
		}
		name := k
		switch k {
		case "DURABILITY":
			name = "durability"
		case "INNODB_FLUSH":
			name = "flush_log_at_trx_commit"
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %q does not name it", k, v, err)
		}
	}
}

func TestPlannedGrowsWithTheSweep(t *testing.T) {
	a, _ := LoadConfig(envOf(nil))
	b, _ := LoadConfig(envOf(map[string]string{"ITERATIONS": "2"}))
	if a.Planned() <= 0 || b.Planned() <= a.Planned() {
		t.Errorf("planned %d then %d", a.Planned(), b.Planned())
	}
}

func TestMallocVariable(t *testing.T) {
	c, err := LoadConfig(envOf(nil))
	if err != nil || c.Malloc != server.Glibc || !strings.Contains(strings.Join(c.Lines(), "\n"), "allocator (MALLOC): glibc") {
		t.Errorf("default allocator %q %v", c.Malloc, err)
	}
	c, err = LoadConfig(envOf(map[string]string{"MALLOC": "JeMalloc"}))
	if err != nil || c.Malloc != "jemalloc" || !strings.Contains(strings.Join(c.Lines(), "\n"), "allocator (MALLOC): jemalloc") {
		t.Errorf("MALLOC=JeMalloc: %q %v", c.Malloc, err)
	}
	if _, err := LoadConfig(envOf(map[string]string{"MALLOC": "hoard"})); err == nil || !strings.Contains(err.Error(), "MALLOC") {
		t.Errorf("MALLOC=hoard: %v", err)
	}
}

// TARGET measures an external server: one engine, labelled, nothing about
// a server of sqlbench's own.
func TestExternalTarget(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"TARGET": "127.0.0.1:3520,user=bench", "ENGINE": "SPIDER",
		"LABEL": "Spider, 2 shards", "NO_PREPARE": "1", "WORKLOADS": "oltp_point_select", "TABLE_SIZES": "2000"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.External == nil || c.External.Host != "127.0.0.1" || c.External.Port != 3520 || c.External.User != "bench" ||
		c.TableEngine != "SPIDER" || !c.NoPrepare || !reflect.DeepEqual(c.Engines, []string{"Spider, 2 shards"}) {
		t.Errorf("external config %+v", c)
	}
	l := strings.Join(c.Lines(), "\n")
	if !strings.Contains(l, "external server 127.0.0.1:3520 as bench") || !strings.Contains(l, "NO_PREPARE") ||
		strings.Contains(l, "allocator (MALLOC)") {
		t.Errorf("lines:\n%s", l)
	}
	d, err := LoadConfig(envOf(map[string]string{"TARGET": "/tmp/m.sock", "ENGINE": "TidesDB"}))
	if err != nil || d.Label != "TidesDB (external)" || d.NoPrepare || d.External.Socket != "/tmp/m.sock" {
		t.Errorf("defaults %+v %v", d, err)
	}
	if n, _ := LoadConfig(envOf(nil)); n.External != nil || n.Label != "" {
		t.Errorf("no TARGET, yet external: %+v", n)
	}
}

// Options that contradict TARGET (they configure a server sqlbench starts),
// or external options without TARGET, are refused with a reason.
func TestExternalContradictions(t *testing.T) {
	ext := func(k, v string) map[string]string {
		return map[string]string{"TARGET": "127.0.0.1:3520", "ENGINE": "TidesDB", k: v}
	}
	for _, env := range []map[string]string{
		ext("MEM_LIMIT", "1G"), ext("ENGINES", "TidesDB"), ext("DURABILITY", "durable"), ext("MALLOC", "jemalloc"),
		ext("CNF", "x.cnf"), ext("PORT", "3431"), ext("SERVER_DIR", "/tmp/x"), ext("TIDESDB_BLOCK_CACHE", "1G"),
		ext("TIDESDB_SYNC_MODE", "2"), ext("INNODB_FLUSH", "1"), ext("MEMORY", "seed"),
		ext("NO_PREPARE", "maybe"), ext("ENGINE", "no such"), ext("TABLE_SIZES", "1000 2000"),
		{"TARGET": "127.0.0.1:3520"}, {"TARGET": "127.0.0.1", "ENGINE": "TidesDB"},
		{"ENGINE": "SPIDER"}, {"LABEL": "x"}, {"NO_PREPARE": "1"},
	} {
		if env["TABLE_SIZES"] != "" {
			env["NO_PREPARE"] = "1"
		}
		_, err := LoadConfig(envOf(env))
		if err == nil {
			t.Errorf("%v accepted", env)
		} else if _, k := env["MEM_LIMIT"]; k && !strings.Contains(err.Error(), "MEM_LIMIT") {
			t.Errorf("%v: error does not name MEM_LIMIT: %v", env, err)
		}
	}
	// Without NO_PREPARE, several sizes are fine (sqlbench drops its tables between them).
	if _, err := LoadConfig(envOf(ext("TABLE_SIZES", "1000 2000"))); err != nil {
		t.Errorf("two sizes with prepare refused: %v", err)
	}
}
