// Command iibench is the TideSQL port of the insert benchmark (iibench):
// it reads a TOML task queue ([defaults] and [[task]] entries, the format
// of the seed article), runs the tasks in order (a load phase of
// uncapped writers, then a mixed phase of capped writers and paced range
// queries), writes one TSV of report intervals per task, a summary
// (summary.md, summary.csv) and charts.
//
// By default each task's dsn is used as written (a plain client). With
// --server it runs a throw-away server per engine (internal/server),
// the engine read from each task's table_options.
//
//	iibench --config tools/sql/iibench/quick.toml --server
//	iibench --config tools/sql/iibench/seed.toml --dsn-socket /tmp/mariadb.sock
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

// options are the command line.
type options struct {
	config     string
	useServer  bool
	durability string
	memory     string
	cache      string
	memLimit   string
	cnf        string
	malloc     string
	out        string
	dsnSocket  string
	serverDir  string
	port       int
	noCharts   bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("iibench", flag.ContinueOnError)
	fs.StringVar(&o.config, "config", "", "task queue (TOML; required), e.g. tools/sql/iibench/quick.toml")
	fs.BoolVar(&o.useServer, "server", false, "run a throw-away server per engine (engine from each task's table_options)")
	fs.StringVar(&o.durability, "durability", server.Relaxed, "--server: durability preset relaxed|durable")
	fs.StringVar(&o.memory, "memory", server.Equal, "--server: memory preset equal|seed")
	fs.StringVar(&o.cache, "cache", "", "--server: cache size of every engine (default: the preset's)")
	fs.StringVar(&o.memLimit, "mem-limit", "", "--server: memory limit of each server with --memory equal (default: the preset's)")
	fs.StringVar(&o.cnf, "cnf", "", "--server: a my.cnf included after the preset")
	fs.StringVar(&o.malloc, "malloc", server.Glibc, "--server: the servers' allocator: "+strings.Join(server.Allocators, ", ")+" (LD_PRELOAD)")
	fs.StringVar(&o.out, "out", "", "output directory (default results/iibench-<stamp>)")
	fs.StringVar(&o.dsnSocket, "dsn-socket", "", "without --server: use this Unix socket in every task's dsn")
	fs.StringVar(&o.serverDir, "server-dir", "", "--server: server directory (default build/sql/iibench-server)")
	fs.IntVar(&o.port, "port", 3420, "--server: TCP port of the server")
	fs.BoolVar(&o.noCharts, "no-charts", false, "skip the charts")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (give the task file with --config)", fs.Args())
	}
	if o.config == "" {
		return o, fmt.Errorf("--config FILE is required (e.g. tools/sql/iibench/quick.toml)")
	}
	if o.useServer && o.dsnSocket != "" {
		return o, fmt.Errorf("--dsn-socket is for a server you run yourself; --server points every dsn at its own server")
	}
	m, err := server.ParseMalloc(o.malloc)
	if err != nil {
		return o, fmt.Errorf("--malloc: %w", err)
	}
	if m != server.Glibc && !o.useServer {
		return o, fmt.Errorf("--malloc %s needs --server (a server you run yourself has the allocator you started it with)", m)
	}
	o.malloc = m
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "iibench:", err)
		os.Exit(1)
	}
}

// buildPreset applies the flags to the default preset.
func buildPreset(o options) (server.Preset, error) {
	p := server.DefaultPreset()
	p.Durability, p.Memory = o.durability, o.memory
	if o.cache != "" {
		c, err := server.ParseBytes(o.cache)
		if err != nil {
			return p, fmt.Errorf("--cache: %w", err)
		}
		p.TidesDBCache, p.InnoDBCache, p.RocksDBCache = c, c, c
	}
	if o.memLimit != "" {
		m, err := server.ParseBytes(o.memLimit)
		if err != nil {
			return p, fmt.Errorf("--mem-limit: %w", err)
		}
		p.MemLimit = m
	}
	if p.Memory == server.Seed {
		p.MemLimit = 0
	}
	return p, p.Validate()
}

// run runs the whole queue.
func run(o options) error {
	tasks, err := LoadConfig(o.config)
	if err != nil {
		return err
	}
	env, envErr := server.FindEnv()
	info := RunInfo{Config: o.config, Mode: "plain client (each task's dsn as written)"}
	var mgr *serverMgr
	if o.useServer {
		for _, t := range tasks {
			if t.Engine == "" {
				return fmt.Errorf("%s: --server needs the engine: give table_options with ENGINE=InnoDB|TidesDB|RocksDB "+
					"(or run an earlier task that creates table %s with one)", t.Label(), t.Table)
			}
			if _, err := server.CanonicalEngine(t.Engine); err != nil {
				return fmt.Errorf("%s: key \"table_options\": --server runs only TidesDB, InnoDB and RocksDB: %w", t.Label(), err)
			}
		}
		p, err := buildPreset(o)
		if err != nil {
			return err
		}
		if envErr != nil {
			return envErr
		}
		dir := o.serverDir
		if dir == "" {
			dir = filepath.Join(env.Root, "build", "sql", "iibench-server")
		}
		if o.malloc, err = server.ParseMalloc(o.malloc); err != nil {
			return fmt.Errorf("--malloc: %w", err)
		}
		if _, err := server.MallocLibrary(o.malloc); err != nil {
			return err
		}
		mgr = newServerMgr(env, p, o.cnf, o.malloc, dir, o.port)
		info.Mode = "--server (one throw-away server per engine, port " + fmt.Sprint(o.port) + ")"
		info.PresetLines = append([]string{"allocator: " + server.MallocSummary(o.malloc)},
			p.Summary()...)
		info.WithDisk = true
	} else if o.dsnSocket != "" {
		info.Mode = "plain client, dsn socket " + o.dsnSocket
	}
	if o.out == "" {
		o.out = filepath.Join("results", "iibench-"+report.Stamp(time.Now()))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan struct{})
	server.HandleInterrupts(func() {
		cancel()
		select { // let the run write what it measured and stop its server
		case <-finished:
		case <-time.After(2 * time.Minute):
		}
	})

	renv := runEnv{out: o.out, clock: realClock{}, runStart: time.Now(), log: os.Stderr}
	var results []TaskResult
	var runErr error
	failed := 0
	for i, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		renv.later = 0
		for _, u := range tasks[i+1:] {
			renv.later += u.Duration
		}
		r, err := runOne(ctx, mgr, o, t, renv)
		if err != nil {
			runErr = err
			break
		}
		results = append(results, r)
		if r.Err != nil {
			// the next tasks still run: with --server a dead server is
			// restarted; the summary marks the task failed
			fmt.Fprintf(os.Stderr, "iibench: %v\n", r.Err)
			failed++
		}
	}
	if runErr == nil && failed > 0 {
		runErr = fmt.Errorf("%d of %d tasks failed (see the summary)", failed, len(tasks))
	}
	if mgr != nil {
		if err := mgr.Stop(); err != nil {
			info.Notes = append(info.Notes, err.Error())
		}
		info.Notes = append(info.Notes, mgr.Notes...)
		for _, e := range server.Engines {
			if n, ok := mgr.MemoryNote[e]; ok {
				line := e + " server: " + n
				if p := mgr.Peak[e]; p > 0 {
					line += ", peak " + server.FormatBytes(p)
				}
				info.Notes = append(info.Notes, line)
			}
		}
		for _, e := range server.Engines {
			if n, ok := mgr.MallocNote[e]; ok {
				line := e + " server: " + n
				if b, ok := mgr.Build[e]; ok {
					line += "; tidesdb_build " + b
				}
				info.Notes = append(info.Notes, line)
			}
		}
		if len(mgr.Settings) > 0 {
			_ = server.WriteSettings(filepath.Join(o.out, "settings.csv"), mgr.Settings)
		}
	}
	if ctx.Err() != nil {
		info.Notes = append(info.Notes, "interrupted: the summary holds what was measured until then")
	}
	if len(results) > 0 {
		if err := WriteSummary(os.Stdout, o.out, info, results); err != nil {
			fmt.Fprintln(os.Stderr, "writing the summary:", err)
		}
		if !o.noCharts {
			if err := drawCharts(env.Root, o.out); err != nil {
				fmt.Fprintln(os.Stderr, "charts:", err)
			}
		}
		fmt.Printf("\nresults in %s\n", o.out)
	}
	close(finished)
	if ctx.Err() != nil {
		select {} // the interrupt handler stops the servers and exits 130
	}
	return runErr
}

// runOne runs a task: in --server mode it makes the engine's server run
// and points the dsn at it first.
func runOne(ctx context.Context, mgr *serverMgr, o options, t Task, renv runEnv) (TaskResult, error) {
	dsn := t.DSN
	var err error
	if mgr != nil {
		if mgr.cur == nil || mgr.curEngine != t.Engine {
			renv.progressf(t.Duration, "starting the %s server (port %d, %s)", t.Engine, mgr.port, mgr.dir)
		}
		if err = mgr.Ensure(ctx, t.Engine); err != nil {
			return TaskResult{}, err
		}
		if dsn, err = mgr.Prepare(ctx, t.DSN); err != nil {
			return TaskResult{}, fmt.Errorf("%s: %w", t.Label(), err)
		}
	} else if o.dsnSocket != "" {
		if dsn, err = withSocket(dsn, o.dsnSocket); err != nil {
			return TaskResult{}, err
		}
	}
	db, err := openDSN(ctx, dsn)
	if err != nil {
		return TaskResult{}, fmt.Errorf("%s: connecting with dsn %q: %w", t.Label(), redact(dsn), err)
	}
	defer db.Close()
	r := runTask(ctx, db, t, renv)
	if mgr != nil {
		if r.Engine != "" {
			r.DiskBytes = mgr.DiskBytes(r.Engine, dbName(dsn))
		}
		if r.Err != nil && !mgr.Alive() {
			r.Err = fmt.Errorf("%w\nthe %s server died: %s; the end of its error log:\n%s", r.Err, t.Engine, mgr.DeathNote(), mgr.LogTail(12))
		}
	}
	return r, nil
}

// drawCharts runs plot/iibench.py over the run's summary.csv.
func drawCharts(root, out string) error {
	if root == "" {
		return fmt.Errorf("repository root not found: charts skipped")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	return report.Plot(root, "iibench.py", abs)
}

// redact hides a dsn's password in messages.
func redact(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon > at {
		return dsn
	}
	return dsn[:colon] + ":***" + dsn[at:]
}

// dbName is the database a dsn names.
func dbName(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return ""
	}
	return cfg.DBName
}
