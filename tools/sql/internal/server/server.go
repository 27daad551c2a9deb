package server

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// PinnedVersion is what `mariadbd --version` must contain: the plugin
// only loads into the exact server version it was built against.
const PinnedVersion = "10.11.18-"

// Env locates the server binary, the plugin directory and the project.
type Env struct {
	Root      string // repository root
	Mariadbd  string // /usr/sbin/mariadbd
	PluginDir string // build/mariadb/plugin (ha_tidesdb.so + Debian's plugins)
}

// FindEnv finds the repository root (TIDESQL_ROOT, else the nearest
// parent of the working directory holding mariadb/ha_tidesdb) and checks
// the server version and the plugins.
func FindEnv() (Env, error) {
	root := os.Getenv("TIDESQL_ROOT")
	if root == "" {
		dir, _ := os.Getwd()
		for d := dir; ; d = filepath.Dir(d) {
			if st, err := os.Stat(filepath.Join(d, "mariadb", "ha_tidesdb")); err == nil && st.IsDir() {
				root = d
				break
			}
			if filepath.Dir(d) == d {
				return Env{}, fmt.Errorf("cannot find the repository root from %s: run inside the clone or set TIDESQL_ROOT", dir)
			}
		}
	}
	e := Env{Root: root, Mariadbd: "/usr/sbin/mariadbd", PluginDir: filepath.Join(root, "build", "mariadb", "plugin")}
	if v := os.Getenv("TIDESQL_PLUGIN_DIR"); v != "" {
		e.PluginDir = v
	}
	out, err := exec.Command(e.Mariadbd, "--version").Output()
	if err != nil {
		return e, fmt.Errorf("%s is not runnable (%v): run scripts/mariadb/setup.sh as root", e.Mariadbd, err)
	}
	if !strings.Contains(string(out), PinnedVersion) {
		return e, fmt.Errorf("server version mismatch: mariadbd reports %q but the plugin is built for %s: reinstall the pinned packages (scripts/mariadb/setup.sh)",
			strings.TrimSpace(string(out)), strings.TrimSuffix(PinnedVersion, "-"))
	}
	return e, nil
}

// CheckEngines fails with a clear message when an engine's plugin is absent.
func (e Env) CheckEngines(engines []string) error {
	for _, en := range engines {
		var so string
		switch en {
		case "TidesDB":
			so = "ha_tidesdb.so"
		case "RocksDB":
			so = "ha_rocksdb.so"
		default:
			continue
		}
		if _, err := os.Stat(filepath.Join(e.PluginDir, so)); err != nil {
			hint := "build it with scripts/mariadb/build_plugin.sh"
			if en == "RocksDB" {
				hint = "install mariadb-plugin-rocksdb (scripts/mariadb/setup.sh), then scripts/mariadb/build_plugin.sh links it"
			}
			return fmt.Errorf("engine %s: plugin %s not found in %s: %s", en, so, e.PluginDir, hint)
		}
	}
	return nil
}

// Options of one server.
type Options struct {
	Dir     string   // server directory: data/, my.cnf, socket, pid, error.log
	Port    int      // TCP port on 127.0.0.1
	Preset  Preset   // engine settings
	Engines []string // plugins to load (TidesDB and/or RocksDB; InnoDB is built in)
	CnfFile string   // a user my.cnf included after the preset (optional)
	Fresh   bool     // wipe the data directory first
	// Malloc is the allocator (Allocators; "" is glibc): any other is
	// preloaded (LD_PRELOAD) and checked mapped in the server after start.
	Malloc string
	// PluginDir overrides Env.PluginDir for this server (a PGO or LTO
	// build of the plugin, say); "" keeps Env.PluginDir.
	PluginDir string
	bare      bool // no preset lines (reading the defaults)
}

// Server is a running mariadbd.
type Server struct {
	env    Env
	opt    Options
	cmd    *exec.Cmd
	done   chan struct{}
	cgroup *Cgroup
	Socket string
	Log    string
	// Malloc is the allocator the server runs on (checked in its memory
	// map), MallocLib the library preloaded ("" for glibc).
	Malloc, MallocLib string
	// MemoryNote says how memory was limited ("cgroup v1 limit 1 GiB",
	// or why not), printed with the results.
	MemoryNote string
}

var (
	regMu    sync.Mutex
	registry = map[*Server]bool{}
)

// StopAll stops every server started and not yet stopped.
func StopAll() {
	regMu.Lock()
	var l []*Server
	for s := range registry {
		l = append(l, s)
	}
	regMu.Unlock()
	for _, s := range l {
		_ = s.Stop()
	}
}

// HandleInterrupts stops every server on SIGINT/SIGTERM/SIGHUP, runs
// cleanup (may be nil) and exits with status 130. Call once in main.
func HandleInterrupts(cleanup func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-ch
		fmt.Fprintf(os.Stderr, "\ninterrupted (%v): stopping servers\n", s)
		if cleanup != nil {
			cleanup()
		}
		StopAll()
		os.Exit(130)
	}()
}

// Start initialises the data directory if needed, writes my.cnf and
// starts mariadbd; it returns once the server answers.
func Start(ctx context.Context, env Env, o Options) (*Server, error) {
	if err := o.Preset.Validate(); err != nil {
		return nil, err
	}
	malloc, err := ParseMalloc(o.Malloc)
	if err != nil {
		return nil, err
	}
	lib, err := MallocLibrary(malloc)
	if err != nil {
		return nil, err
	}
	if o.PluginDir != "" {
		if env.PluginDir, err = filepath.Abs(o.PluginDir); err != nil {
			return nil, err
		}
		if st, err := os.Stat(env.PluginDir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("plugin directory %s not found", env.PluginDir)
		}
	}
	if err := env.CheckEngines(o.Engines); err != nil {
		return nil, err
	}
	if err := portFree(o.Port); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	data := filepath.Join(dir, "data")
	if o.Fresh {
		if err := os.RemoveAll(data); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{env: env, opt: o, Socket: filepath.Join(dir, "mysqld.sock"), Log: filepath.Join(dir, "error.log"), done: make(chan struct{}),
		Malloc: malloc, MallocLib: lib}
	if len(s.Socket) > 100 {
		return nil, fmt.Errorf("socket path %s is too long for a Unix socket: use a shorter server directory", s.Socket)
	}
	if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
		log := filepath.Join(dir, "install-db.log")
		out, err := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--user=root", "--datadir="+data,
			"--auth-root-authentication-method=normal", "--skip-test-db", "--force").CombinedOutput()
		_ = os.WriteFile(log, out, 0o644)
		if err != nil {
			return nil, fmt.Errorf("mariadb-install-db failed (%v): see %s", err, log)
		}
	}
	// Temporary tables in a directory of the server's own, emptied at
	// every start: not shared with other servers in /tmp, and their disk
	// use counted with the server.
	tmp := filepath.Join(dir, "tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte(s.cnf(data)), 0o644); err != nil {
		return nil, err
	}
	_ = os.Remove(s.Socket)
	_ = os.WriteFile(s.Log, nil, 0o644)

	args := []string{"--defaults-file=" + cnf}
	s.MemoryNote = "no memory limit"
	if o.Preset.Memory == Equal && o.Preset.MemLimit > 0 {
		cg, note := NewCgroup(fmt.Sprintf("tidesql-bench-%d-%d", os.Getpid(), o.Port), o.Preset.MemLimit)
		s.cgroup, s.MemoryNote = cg, note
	}
	if s.cgroup != nil {
		// Join the group before exec, so every allocation of the server
		// (and the page cache it reads) is charged to it.
		sh := fmt.Sprintf("echo $$ > %s && exec %s \"$@\"", s.cgroup.ProcsFile(), env.Mariadbd)
		s.cmd = exec.Command("/bin/sh", append([]string{"-c", sh, "mariadbd"}, args...)...)
	} else {
		s.cmd = exec.Command(env.Mariadbd, args...)
	}
	// The allocator is preloaded through the environment: with the cgroup
	// wrapper, /bin/sh runs on it too until it execs mariadbd (same pid).
	s.cmd.Env = preloadEnv(lib)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.cgroup.Remove()
		return nil, fmt.Errorf("starting mariadbd: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	regMu.Lock()
	registry[s] = true
	regMu.Unlock()

	deadline := time.Now().Add(120 * time.Second)
	for {
		select {
		case <-s.done:
			_ = s.Stop()
			return nil, fmt.Errorf("mariadbd exited during start-up:\n%s", s.LogTail(25))
		default:
		}
		if db, err := s.Open(""); err == nil {
			err = db.PingContext(ctx)
			db.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("mariadbd did not answer within 120 s:\n%s", s.LogTail(25))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, e := range o.Engines {
		if err := s.checkEngine(e); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	if err := CheckMalloc(s.Pid(), malloc); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// BuildUnknown is TidesDBBuild's answer when the plugin does not say.
const BuildUnknown = "unknown"

// TidesDBBuild is the plugin's build flavour (the status variable
// tidesdb_build: plain, pgo, lto, pgo+lto), BuildUnknown when the plugin
// has no such variable or it cannot be read: never an error.
func (s *Server) TidesDBBuild(ctx context.Context) string {
	db, err := s.Open("")
	if err != nil {
		return BuildUnknown
	}
	defer db.Close()
	var name, v string
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'tidesdb_build'").Scan(&name, &v); err != nil || v == "" {
		return BuildUnknown
	}
	return v
}

// MallocSettings is the allocator as a row of the settings table when it
// is not glibc's: not a server variable, but it changes what is measured.
func (s *Server) MallocSettings(engine string) []Setting {
	if s.Malloc == Glibc {
		return nil
	}
	return []Setting{{Engine: engine, Variable: "allocator (LD_PRELOAD)", Default: Glibc, Value: s.Malloc}}
}

// MallocNote says which allocator the server runs on, for the results.
func (s *Server) MallocNote() string {
	if s.MallocLib == "" {
		return "allocator glibc"
	}
	return "allocator " + s.Malloc + " (LD_PRELOAD " + s.MallocLib + ", mapped)"
}

// portFree fails when something already listens on 127.0.0.1:port (a
// server would exit at start-up with only a bind error in its log).
func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("port %d on 127.0.0.1 is in use (another server or benchmark running?): give another port: %w", port, err)
	}
	return l.Close()
}

func (s *Server) cnf(data string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mysqld]\nuser=root\ndatadir=%s\nsocket=%s\nport=%d\nbind-address=127.0.0.1\nskip-name-resolve\n",
		data, s.Socket, s.opt.Port)
	fmt.Fprintf(&b, "pid-file=%s\nlog-error=%s\nplugin-dir=%s\nplugin_maturity=gamma\ntmpdir=%s\n",
		filepath.Join(s.opt.Dir, "mysqld.pid"), s.Log, s.env.PluginDir, filepath.Join(s.opt.Dir, "tmp"))
	for _, e := range s.opt.Engines {
		switch e {
		case "TidesDB":
			b.WriteString("plugin-load-add=ha_tidesdb.so\n")
		case "RocksDB":
			b.WriteString("plugin-load-add=ha_rocksdb.so\n")
		}
	}
	var lines []string
	if !s.opt.bare {
		lines = s.opt.Preset.CnfLines()
	}
	for _, l := range lines {
		if !s.wants(l) {
			continue
		}
		b.WriteString(l + "\n")
	}
	if s.opt.CnfFile != "" {
		abs, _ := filepath.Abs(s.opt.CnfFile)
		b.WriteString("!include " + abs + "\n")
	}
	return b.String()
}

// wants drops another engine's variables when its plugin is not loaded
// (the server refuses unknown variables), and InnoDB's in a server for
// another engine.
func (s *Server) wants(line string) bool {
	has := func(e string) bool {
		for _, x := range s.opt.Engines {
			if x == e {
				return true
			}
		}
		return false
	}
	if strings.HasPrefix(line, "tidesdb_") {
		return has("TidesDB")
	}
	if strings.HasPrefix(line, "rocksdb_") {
		return has("RocksDB")
	}
	if strings.HasPrefix(line, "innodb_") || strings.HasPrefix(line, "plugin_load_add = provider_") {
		// InnoDB's tuning (and the compression provider it loads) only
		// where InnoDB is the engine under test (no plugin loaded). Elsewhere it holds only system tables, and the
		// preset's 64 MiB log buffer alone kept ~50 MiB resident in the
		// TidesDB and MyRocks servers, under the same memory limit.
		return len(s.opt.Engines) == 0
	}
	return true
}

func (s *Server) checkEngine(e string) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	var support string
	err = db.QueryRow("SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = ?", e).Scan(&support)
	if err == sql.ErrNoRows || (err == nil && support != "YES" && support != "DEFAULT") {
		return fmt.Errorf("engine %s is not available in the server (plugin failed to load?):\n%s", e, s.LogTail(15))
	}
	return err
}

// DSN of the server for database db (root over the socket).
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("root@unix(%s)/%s?multiStatements=true&interpolateParams=true", s.Socket, db)
}

// Open a connection pool to database db ("" = none).
func (s *Server) Open(db string) (*sql.DB, error) { return sql.Open("mysql", s.DSN(db)) }

// Port of the server.
func (s *Server) Port() int { return s.opt.Port }

// Dir of the server.
func (s *Server) Dir() string { return s.opt.Dir }

// DataDir of the server.
func (s *Server) DataDir() string { return filepath.Join(s.opt.Dir, "data") }

// Pid of mariadbd.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Alive reports whether mariadbd still runs.
func (s *Server) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop shuts the server down (SIGTERM, SIGKILL after 120 s) and removes
// its memory cgroup. Safe to call more than once.
func (s *Server) Stop() error {
	regMu.Lock()
	live := registry[s]
	delete(registry, s)
	regMu.Unlock()
	if !live {
		return nil
	}
	var err error
	if s.Alive() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(120 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
			err = fmt.Errorf("mariadbd did not stop within 120 s: killed")
		}
	}
	s.cgroup.Remove()
	return err
}

// Kill stops the server with SIGKILL (crash tests).
func (s *Server) Kill() {
	if s.Alive() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	regMu.Lock()
	delete(registry, s)
	regMu.Unlock()
	s.cgroup.Remove()
}

// LogTail returns the last n lines of the error log.
func (s *Server) LogTail(n int) string {
	f, err := os.Open(s.Log)
	if err != nil {
		return "(no error log: " + err.Error() + ")"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return "  " + strings.Join(lines, "\n  ")
}

// PeakMemory is the cgroup's peak usage in bytes (0 without a cgroup).
func (s *Server) PeakMemory() int64 { return s.cgroup.Peak() }

// EngineDataBytes is the size on disk of an engine's files in the data
// directory: TidesDB's #tidesdb and MyRocks' #rocksdb (logs included);
// for InnoDB the schema's .ibd files plus the system tablespace, undo and
// redo logs.
func (s *Server) EngineDataBytes(engine, schema string) int64 {
	data := s.DataDir()
	switch engine {
	case "TidesDB":
		return dirBytes(filepath.Join(data, "#tidesdb"))
	case "RocksDB":
		return dirBytes(filepath.Join(data, "#rocksdb"))
	}
	var n int64
	for _, g := range []string{filepath.Join(data, schema, "*.ibd"), filepath.Join(data, "ibdata*"),
		filepath.Join(data, "undo*"), filepath.Join(data, "ib_logfile*")} {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			if st, err := os.Stat(f); err == nil {
				n += allocated(st)
			}
		}
	}
	return n
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += allocated(fi)
		}
		return nil
	})
	return n
}

// allocated is the bytes a file occupies on disk (sparse files count what
// is allocated, as `du` does).
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// DropCaches asks the kernel to drop clean page cache, so each engine
// starts cold; returns an error when not permitted (the run notes it).
func DropCaches() error {
	syscall.Sync()
	f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString("3\n")
	return err
}

// ErrNotRunning is returned by operations on a stopped server.
var ErrNotRunning = errors.New("server is not running")

// Run is a fresh server for one engine of a benchmark: the page cache
// dropped first (so each engine starts cold), the engine's plugin loaded,
// the settings that differ from the defaults read, and the database made.
type Run struct {
	*Server
	Engine   string
	Settings []Setting
	Notes    []string // what could not be done, for the results
	// TidesDBBuild is the plugin's tidesdb_build status on a TidesDB
	// server (BuildUnknown when it has none), "" on the others.
	TidesDBBuild string
}

// StartRun starts o (Fresh is forced) for engine and creates database db.
func StartRun(ctx context.Context, env Env, o Options, engine, db string) (*Run, error) {
	r := &Run{Engine: engine}
	if err := DropCaches(); err != nil {
		r.Notes = append(r.Notes, "page cache not dropped before each server started ("+err.Error()+")")
	}
	o.Engines, o.Fresh = nil, true
	o.Preset.MemLimit = o.Preset.LimitFor(engine)
	if engine != "InnoDB" {
		o.Engines = []string{engine}
	}
	s, err := Start(ctx, env, o)
	if err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", engine, err)
	}
	r.Server = s
	if r.Settings, err = s.Settings(ctx); err != nil {
		r.Notes = append(r.Notes, "settings of the "+engine+" server not read: "+err.Error())
	}
	r.Settings = append(r.Settings, s.MallocSettings(engine)...)
	if engine == "TidesDB" {
		r.TidesDBBuild = s.TidesDBBuild(ctx)
	}
	conn, err := s.Open("")
	if err == nil {
		_, err = conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+db+"`")
		conn.Close()
	}
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("%s server: creating database %s: %w", engine, db, err)
	}
	return r, nil
}

// Why explains a failure of a step run against the server: when the
// server is gone it adds the end of its error log.
func (s *Server) Why(err error) error {
	if err == nil || s.Alive() {
		return err
	}
	return fmt.Errorf("%w\nthe server died (%s); the end of its error log:\n%s", err, s.DeathNote(), s.LogTail(12))
}

// DeathNote says why a dead server is gone when the kernel log knows: a
// memory-cgroup OOM kill leaves nothing in the server's own error log.
func (s *Server) DeathNote() string {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return "cause unknown: kernel log not readable: " + err.Error()
	}
	if strings.Contains(string(out), fmt.Sprintf("Killed process %d (mariadbd)", s.Pid())) {
		return fmt.Sprintf("killed by the kernel's OOM killer at its memory limit of %s: raise the limit or lower the caches",
			FormatBytes(s.opt.Preset.MemLimit))
	}
	return "not an OOM kill: see its error log"
}
