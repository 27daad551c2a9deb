package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"256M": 256 << 20, "2G": 2 << 30, "2147483648": 2 << 30, "512k": 512 << 10,
		"1.5G": 3 << 29, "64MiB": 64 << 20} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "abc", "-1", "12X"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func TestPresetValidate(t *testing.T) {
	p := DefaultPreset()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Preset){
		func(p *Preset) { p.Durability = "fast" },
		func(p *Preset) { p.Memory = "huge" },
		func(p *Preset) { p.TidesDBCache = 1 << 20 },
		func(p *Preset) { p.MemLimit = 300 << 20 },
		func(p *Preset) { p.InnoDBCompression = "zip" },
		func(p *Preset) { p.InnoDBCompression = "ZSTD" }, // InnoDB has no zstd page compression
		func(p *Preset) { p.TidesDBSync = "SOMETIMES" },
		func(p *Preset) { p.InnoDBFlush = "3" },
		func(p *Preset) { p.Isolation = "SNAPSHOT" },
		func(p *Preset) { p.RocksDBMemLimit = 512 << 20 },             // below the others' 1 GiB
		func(p *Preset) { p.MemLimit, p.RocksDBMemLimit = 0, 2<<30 },  // no limit for the others
		func(p *Preset) { p.Memory, p.RocksDBMemLimit = Seed, 2<<30 }, // the seed preset has no limits
	}
	for i, f := range bad {
		q := DefaultPreset()
		f(&q)
		if err := q.Validate(); err == nil {
			t.Errorf("bad preset %d accepted: %+v", i, q)
		}
	}
}

// A MyRocks limit above the others' applies to MyRocks's server only and
// is named in the summary; without one every engine gets MemLimit.
func TestRocksDBMemLimit(t *testing.T) {
	p := DefaultPreset()
	for _, e := range []string{"TidesDB", "InnoDB", "RocksDB"} {
		if got := p.LimitFor(e); got != 1<<30 {
			t.Errorf("no MyRocks limit: LimitFor(%s) = %d, want 1 GiB", e, got)
		}
	}
	if s := strings.Join(p.Summary(), "\n"); strings.Contains(s, "MyRocks's to") {
		t.Errorf("summary names a MyRocks limit that was not set:\n%s", s)
	}
	p.RocksDBMemLimit = 3 << 29
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for e, want := range map[string]int64{"TidesDB": 1 << 30, "InnoDB": 1 << 30, "RocksDB": 3 << 29} {
		if got := p.LimitFor(e); got != want {
			t.Errorf("LimitFor(%s) = %d, want %d", e, got, want)
		}
	}
	if s := strings.Join(p.Summary(), "\n"); !strings.Contains(s, "limited to 1 GiB (page cache included), MyRocks's to 1.5 GiB") {
		t.Errorf("summary does not label MyRocks's larger limit:\n%s", s)
	}
	p.Memory, p.MemLimit, p.RocksDBMemLimit = Seed, 0, 0
	if got := p.LimitFor("RocksDB"); got != 0 {
		t.Errorf("seed preset: LimitFor(RocksDB) = %d, want no limit", got)
	}
}

func TestCnfLinesFollowPresets(t *testing.T) {
	has := func(l []string, s string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	p := DefaultPreset()
	l := p.CnfLines()
	for _, want := range []string{"tidesdb_default_sync_mode = NONE", "innodb_flush_log_at_trx_commit = 0",
		"rocksdb_flush_log_at_trx_commit = 0", "innodb_flush_method = fsync",
		"tidesdb_block_cache_size = 268435456", "innodb_buffer_pool_size = 268435456", "rocksdb_block_cache_size = 268435456",
		"tidesdb_max_memory_usage = 402653184"} {
		if !has(l, want) {
			t.Errorf("relaxed/equal lacks %q", want)
		}
	}
	p.Durability, p.Memory = Durable, Seed
	l = p.CnfLines()
	for _, want := range []string{"tidesdb_default_sync_mode = FULL", "tidesdb_unified_memtable_sync_mode = FULL",
		"innodb_flush_log_at_trx_commit = 1", "rocksdb_flush_log_at_trx_commit = 1", "innodb_flush_method = O_DIRECT"} {
		if !has(l, want) {
			t.Errorf("durable/seed lacks %q", want)
		}
	}
	for _, x := range l {
		if strings.HasPrefix(x, "tidesdb_max_memory_usage") {
			t.Errorf("seed memory preset bounds TidesDB: %q (the seeds left it 0)", x)
		}
	}
	if p.Name() != "durable/seed" {
		t.Errorf("name %q", p.Name())
	}
	p.InnoDBFlush = "2"
	if !strings.Contains(p.Name(), "custom") || !has(p.CnfLines(), "innodb_flush_log_at_trx_commit = 2") {
		t.Errorf("override not applied: %s", p.Name())
	}
}

func TestParseEngines(t *testing.T) {
	e, err := ParseEngines("tidesdb,innodb rocksdb,TidesDB")
	if err != nil || strings.Join(e, " ") != "TidesDB InnoDB RocksDB" {
		t.Fatalf("%v %v", e, err)
	}
	if _, err := ParseEngines("tidesdb,aria"); err == nil || !strings.Contains(err.Error(), "aria") {
		t.Fatalf("unknown engine accepted: %v", err)
	}
}

// integration: needs the pinned server and a built plugin; skipped
// without them (the README test command builds both first).
func integrationEnv(t *testing.T) Env {
	if os.Getenv("TIDESQL_IT") == "" {
		t.Skip("TIDESQL_IT not set")
	}
	env, err := FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestServerStartsWithLimitAndReportsSettings(t *testing.T) {
	env := integrationEnv(t)
	dir := filepath.Join(env.Root, "build", "sql", "it-server")
	p := DefaultPreset()
	s, err := Start(context.Background(), env, Options{Dir: dir, Port: 3391, Preset: p, Engines: []string{"TidesDB"}, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	db, err := s.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE t; CREATE TABLE t.x (id INT PRIMARY KEY) ENGINE=TidesDB; INSERT INTO t.x VALUES (1),(2)"); err != nil {
		t.Fatal(err)
	}
	set, err := s.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, x := range set {
		found[x.Variable] = x.Value
	}
	if found["tidesdb_block_cache_size"] != "268435456" || found["tidesdb_max_memory_usage"] != "402653184" {
		t.Errorf("settings table misses the preset: %v", found)
	}
	// InnoDB only holds system tables here: its tuning (buffered I/O, a
	// 64 MiB log buffer) is the InnoDB server's, not this one's.
	if _, ok := found["innodb_flush_method"]; ok {
		t.Errorf("TidesDB server got InnoDB's tuning: innodb_flush_method %s", found["innodb_flush_method"])
	}
	if _, ok := found["datadir"]; ok {
		t.Errorf("settings table lists datadir")
	}
	var tmpdir string
	if err := db.QueryRow("SELECT @@tmpdir").Scan(&tmpdir); err != nil || tmpdir != filepath.Join(dir, "tmp") {
		t.Errorf("tmpdir %q (%v), want the server's own %s", tmpdir, err, filepath.Join(dir, "tmp"))
	}
	if !strings.Contains(s.MemoryNote, "cgroup") && os.Geteuid() == 0 {
		t.Logf("no cgroup: %s", s.MemoryNote)
	}
	if s.EngineDataBytes("TidesDB", "t") <= 0 {
		t.Errorf("no TidesDB data on disk")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Alive() {
		t.Fatal("server still alive after Stop")
	}
}

func TestMissingPluginIsAClearError(t *testing.T) {
	env := integrationEnv(t)
	env.PluginDir = t.TempDir()
	_, err := Start(context.Background(), env, Options{Dir: t.TempDir(), Port: 3392, Preset: DefaultPreset(), Engines: []string{"TidesDB"}})
	if err == nil || !strings.Contains(err.Error(), "ha_tidesdb.so not found") {
		t.Fatalf("want a missing-plugin error, got %v", err)
	}
}

func TestServerThatFailsToStartIsAClearError(t *testing.T) {
	env := integrationEnv(t)
	dir := filepath.Join(env.Root, "build", "sql", "it-bad")
	p := DefaultPreset()
	p.Extra = []string{"no_such_variable_anywhere = 1"}
	_, err := Start(context.Background(), env, Options{Dir: dir, Port: 3393, Preset: p, Engines: []string{"TidesDB"}, Fresh: true})
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") {
		t.Fatalf("want a start-up error, got %v", err)
	}
}

func TestEveryEngineStartsWithBothPresets(t *testing.T) {
	env := integrationEnv(t)
	for _, e := range Engines {
		for _, d := range []string{Relaxed, Durable} {
			p := DefaultPreset()
			p.Durability = d
			if d == Durable {
				// The seed settings, LZ4 on every engine as sqlbench's seed
				// preset has it (InnoDB through the provider plugin).
				p.Memory = Seed
				p.TidesDBCompression, p.InnoDBCompression, p.RocksDBCompression = "LZ4", "LZ4", "LZ4"
			}
			var plugins []string
			if e != "InnoDB" {
				plugins = []string{e}
			}
			s, err := Start(context.Background(), env, Options{Dir: filepath.Join(env.Root, "build", "sql", "it-"+e), Port: 3394,
				Preset: p, Engines: plugins, Fresh: true})
			if err != nil {
				t.Fatalf("%s %s: %v", e, p.Name(), err)
			}
			db, _ := s.Open("")
			_, err = db.Exec("CREATE DATABASE t; CREATE TABLE t.x (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=" + e + "; INSERT INTO t.x VALUES (1,'a'),(2,'b')")
			var n int
			if err == nil {
				err = db.QueryRow("SELECT COUNT(*) FROM t.x").Scan(&n)
			}
			compression := map[string]string{"TidesDB": "@@tidesdb_default_compression", "InnoDB": "@@innodb_compression_algorithm"}
			if v := compression[e]; v != "" && err == nil {
				var got string
				if err = db.QueryRow("SELECT " + v).Scan(&got); err == nil && d == Durable && !strings.EqualFold(got, "LZ4") {
					err = fmt.Errorf("%s is %q, want LZ4", v, got)
				}
			}
			db.Close()
			s.Stop()
			if err != nil || n != 2 {
				t.Fatalf("%s %s: %v (rows %d)", e, p.Name(), err, n)
			}
		}
	}
}
