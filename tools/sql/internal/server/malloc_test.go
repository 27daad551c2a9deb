package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMalloc(t *testing.T) {
	for in, want := range map[string]string{"": Glibc, "glibc": Glibc, "JeMalloc": "jemalloc", " mimalloc ": "mimalloc", "tcmalloc": "tcmalloc"} {
		if got, err := ParseMalloc(in); err != nil || got != want {
			t.Errorf("ParseMalloc(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMalloc("hoard"); err == nil || !strings.Contains(err.Error(), `unknown allocator "hoard"`) ||
		!strings.Contains(err.Error(), "glibc, jemalloc, mimalloc, tcmalloc") {
		t.Errorf("unknown allocator: %v", err)
	}
	l, err := ParseMallocs("glibc,jemalloc tcmalloc")
	if err != nil || strings.Join(l, " ") != "glibc jemalloc tcmalloc" {
		t.Errorf("list %v %v", l, err)
	}
	for _, bad := range []string{"", " , ", "glibc,glibc", "jemalloc,hoard"} {
		if _, err := ParseMallocs(bad); err == nil {
			t.Errorf("ParseMallocs(%q) accepted", bad)
		}
	}
}

func TestMallocLibrary(t *testing.T) {
	if lib, err := MallocLibrary(Glibc); lib != "" || err != nil {
		t.Errorf("glibc: %q %v", lib, err)
	}
	if _, err := MallocLibrary("hoard"); err == nil {
		t.Error("unknown allocator has a library")
	}
	for _, a := range Allocators[1:] {
		lib, err := MallocLibrary(a)
		if err != nil {
			// not installed here: the error must say what to install
			if !strings.Contains(err.Error(), mallocPackage[a]) {
				t.Errorf("%s: %v lacks the package name", a, err)
			}
			continue
		}
		if filepath.Base(lib) != mallocSoname[a] {
			t.Errorf("%s: %s", a, lib)
		}
	}
}

// This test binary runs on glibc's malloc: nothing preloaded is mapped.
func TestCheckMallocOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc")
	}
	if m, err := MappedAllocators(os.Getpid()); err != nil || len(m) != 0 {
		t.Fatalf("mapped %v %v", m, err)
	}
	if err := CheckMalloc(os.Getpid(), Glibc); err != nil {
		t.Error(err)
	}
	if err := CheckMalloc(os.Getpid(), "jemalloc"); err == nil || !strings.Contains(err.Error(), "glibc's malloc only") {
		t.Errorf("jemalloc claimed for a glibc process: %v", err)
	}
}

func TestPreloadEnvReplacesAnInheritedPreload(t *testing.T) {
	t.Setenv("LD_PRELOAD", "/usr/lib/libother.so")
	count := func(env []string) (n int, v string) {
		for _, kv := range env {
			if strings.HasPrefix(kv, "LD_PRELOAD=") {
				n, v = n+1, strings.TrimPrefix(kv, "LD_PRELOAD=")
			}
		}
		return
	}
	if n, _ := count(preloadEnv("")); n != 0 {
		t.Errorf("glibc server inherits LD_PRELOAD")
	}
	if n, v := count(preloadEnv("/x/libjemalloc.so.2")); n != 1 || v != "/x/libjemalloc.so.2" {
		t.Errorf("LD_PRELOAD %d %q", n, v)
	}
}

// integration: a TidesDB server on jemalloc through the cgroup wrapper
// (the equal-memory preset), an InnoDB server on tcmalloc started directly
// (the seed preset: no cgroup) while this process's environment preloads
// jemalloc, which the server must not inherit.
func TestServerRunsOnTheAllocatorAskedFor(t *testing.T) {
	env := integrationEnv(t)
	for _, a := range []string{"jemalloc", "tcmalloc"} {
		if _, err := MallocLibrary(a); err != nil {
			t.Fatalf("%v (scripts/mariadb/setup.sh installs the allocators)", err)
		}
	}
	s, err := Start(context.Background(), env, Options{Dir: filepath.Join(env.Root, "build", "sql", "it-malloc"), Port: 3395,
		Preset: DefaultPreset(), Engines: []string{"TidesDB"}, Fresh: true, Malloc: "jemalloc"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MappedAllocators(s.Pid())
	build := s.TidesDBBuild(context.Background())
	note := s.MallocNote()
	s.Stop()
	if err != nil || len(m) != 1 || m[0] != "jemalloc" || s.Malloc != "jemalloc" {
		t.Errorf("jemalloc server maps %v (%v), reports %s", m, err, s.Malloc)
	}
	if !strings.Contains(note, "libjemalloc.so.2") || build == "" {
		t.Errorf("note %q, tidesdb_build %q", note, build)
	}
	t.Logf("%s; tidesdb_build %s; %s", note, build, s.MemoryNote)

	je, _ := MallocLibrary("jemalloc")
	t.Setenv("LD_PRELOAD", je)
	p := DefaultPreset()
	p.Memory, p.MemLimit = Seed, 0
	s, err = Start(context.Background(), env, Options{Dir: filepath.Join(env.Root, "build", "sql", "it-malloc"), Port: 3395,
		Preset: p, Fresh: true, Malloc: "tcmalloc"})
	if err != nil {
		t.Fatal(err)
	}
	m, err = MappedAllocators(s.Pid())
	s.Stop()
	if err != nil || len(m) != 1 || m[0] != "tcmalloc" {
		t.Errorf("tcmalloc server maps %v (%v)", m, err)
	}
}

func TestBadAllocatorOrPluginDirIsAClearError(t *testing.T) {
	env := integrationEnv(t)
	dir := filepath.Join(env.Root, "build", "sql", "it-malloc-bad")
	_, err := Start(context.Background(), env, Options{Dir: dir, Port: 3396, Preset: DefaultPreset(), Malloc: "hoard"})
	if err == nil || !strings.Contains(err.Error(), `unknown allocator "hoard"`) {
		t.Errorf("unknown allocator: %v", err)
	}
	_, err = Start(context.Background(), env, Options{Dir: dir, Port: 3396, Preset: DefaultPreset(), Engines: []string{"TidesDB"},
		PluginDir: filepath.Join(t.TempDir(), "none")})
	if err == nil || !strings.Contains(err.Error(), "plugin directory") {
		t.Errorf("missing plugin directory: %v", err)
	}
	_, err = Start(context.Background(), env, Options{Dir: dir, Port: 3396, Preset: DefaultPreset(), Engines: []string{"TidesDB"},
		PluginDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "ha_tidesdb.so not found") {
		t.Errorf("plugin directory without the plugin: %v", err)
	}
}

func TestPortInUseIsAClearError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	_, err = Start(context.Background(), Env{Root: dir, Mariadbd: "/nonexistent", PluginDir: dir},
		Options{Dir: dir, Port: port, Preset: DefaultPreset()})
	if err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Errorf("port in use: %v", err)
	}
}
