// main_test.go checks the command line and the checks run() makes before
// it starts anything.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tidesql/bench/internal/server"
)

func TestFlags(t *testing.T) {
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("no --config: %v", err)
	}
	if _, err := parseFlags([]string{"--config", "q.toml", "--server", "--dsn-socket", "/s"}); err == nil {
		t.Errorf("--server with --dsn-socket accepted")
	}
	o, err := parseFlags([]string{"--config", "q.toml", "--server", "--cache", "512M", "--mem-limit", "2G"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := buildPreset(o)
	if err != nil || p.TidesDBCache != 512<<20 || p.InnoDBCache != 512<<20 || p.RocksDBCache != 512<<20 || p.MemLimit != 2<<30 {
		t.Errorf("preset %+v, %v", p, err)
	}
	for _, bad := range [][]string{{"--durability", "sometimes"}, {"--memory", "lots"}, {"--cache", "big"}, {"--mem-limit", "300M"}} {
		o, _ := parseFlags(append([]string{"--config", "q.toml"}, bad...))
		if _, err := buildPreset(o); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestMallocFlag(t *testing.T) {
	o, err := parseFlags([]string{"--config", "q.toml", "--server", "--malloc", "MiMalloc"})
	if err != nil || o.malloc != "mimalloc" {
		t.Errorf("--malloc MiMalloc: %q %v", o.malloc, err)
	}
	if o, err := parseFlags([]string{"--config", "q.toml"}); err != nil || o.malloc != server.Glibc {
		t.Errorf("default allocator %q %v", o.malloc, err)
	}
	if _, err := parseFlags([]string{"--config", "q.toml", "--server", "--malloc", "hoard"}); err == nil ||
		!strings.Contains(err.Error(), `unknown allocator "hoard"`) {
		t.Errorf("--malloc hoard: %v", err)
	}
	if _, err := parseFlags([]string{"--config", "q.toml", "--malloc", "jemalloc"}); err == nil ||
		!strings.Contains(err.Error(), "--server") {
		t.Errorf("--malloc without --server: %v", err)
	}
}

func TestServerModeNeedsAKnownEngine(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "q.toml")
		os.WriteFile(p, []byte("[defaults]\ndsn = \"u:p@unix(/x.sock)/db\"\n"+body), 0o644)
		return p
	}
	cfg := write("[[task]]\nname = \"a\"\ntable = \"t\"\ncreate_table = true\ntable_options = \"ENGINE=Aria\"\nduration = \"1s\"\n")
	err := run(options{config: cfg, useServer: true, durability: "relaxed", memory: "equal", out: dir})
	if err == nil || !strings.Contains(err.Error(), `task 1 ("a")`) || !strings.Contains(err.Error(), "Aria") {
		t.Errorf("Aria under --server: %v", err)
	}
	cfg = write("[[task]]\nname = \"b\"\ntable = \"t\"\nduration = \"1s\"\n")
	err = run(options{config: cfg, useServer: true, durability: "relaxed", memory: "equal", out: dir})
	if err == nil || !strings.Contains(err.Error(), `task 1 ("b")`) || !strings.Contains(err.Error(), "ENGINE=") {
		t.Errorf("no engine under --server: %v", err)
	}
}

func TestDSNHelpers(t *testing.T) {
	got, err := withSocket("iibench:pw@tcp(10.0.0.1:3306)/iibench?timeout=5s", "/run/my.sock")
	if err != nil || !strings.HasPrefix(got, "iibench:pw@unix(/run/my.sock)/iibench") || !strings.Contains(got, "timeout=5s") {
		t.Errorf("withSocket: %q %v", got, err)
	}
	if dbName("u:p@unix(/a/b.sock)/shop?x=1") != "shop" {
		t.Errorf("dbName")
	}
	if r := redact("u:secret@unix(/s)/db"); strings.Contains(r, "secret") {
		t.Errorf("redact kept the password: %s", r)
	}
	if sqlString(`it's \ ok`) != `'it''s \\ ok'` {
		t.Errorf("sqlString %s", sqlString(`it's \ ok`))
	}
}
