// Command sqlbench is the sysbench sweep of the seed article, ours: for
// every table size and engine it starts a fresh throw-away server
// (internal/server, one preset for all engines), prepares the sysbench
// tables once, then runs each workload at each thread count and
// iteration: a warm-up that is discarded, then the measured run. It
// writes summary_<stamp>.csv, detail_<stamp>.csv (per-second TPS and
// p95), settings_<stamp>.csv (every variable that differs from the
// server's defaults), preset.txt, summary.md with TidesDB's ratios to the
// other engines, the raw sysbench output and the seed's four charts.
//
// Configured by environment variables, the seed's names (see config.go):
//
//	PRESET=quick sqlbench                    # 4 x 50k rows, 1 and 8 threads, 10 s
//	PRESET=seed ENGINES="TidesDB InnoDB" sqlbench
//	TARGET=127.0.0.1:3520 ENGINE=SPIDER LABEL="Spider, 2 shards" NO_PREPARE=1 sqlbench
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/progress"
	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

const schema = "sbtest"

// Row is one measured run.
type Row struct {
	Engine, Workload   string
	Threads, TableSize int
	Iteration          int
	R                  Result
	DataBytes          int64
	Err                string
}

func main() {
	for _, a := range os.Args[1:] {
		if a == "-h" || a == "--help" || a == "help" {
			usage()
			return
		}
	}
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "sqlbench: unexpected arguments %q: sqlbench is configured by environment variables\n", os.Args[1:])
		usage()
		os.Exit(2)
	}
	cfg, err := LoadConfig(os.Getenv)
	if err == nil {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: [VAR=value ...] sqlbench
The sysbench sweep: ENGINES x WORKLOADS x THREAD_COUNTS x TABLE_SIZES x ITERATIONS,
a fresh server per engine and table size. Variables (defaults from PRESET):
  PRESET=quick|seed  TABLE_SIZES TABLES THREAD_COUNTS TIME WARMUP ITERATIONS
  ENGINES (TidesDB InnoDB RocksDB)  WORKLOADS (oltp_read_write oltp_point_select oltp_insert oltp_write_only)
  DURABILITY=relaxed|durable  MEMORY=equal|seed  MEM_LIMIT
  ROCKSDB_MEM_LIMIT (MyRocks's server's limit instead, at least MEM_LIMIT; labelled)
  TIDESDB_SYNC_MODE (0|1|2 or NONE|INTERVAL|FULL)  INNODB_FLUSH ROCKSDB_FLUSH (0|1|2)
  TIDESDB_COMPRESSION INNODB_COMPRESSION ROCKSDB_COMPRESSION (NONE|LZ4|ZSTD|SNAPPY)
  TIDESDB_BLOCK_CACHE INNODB_BUFFER_POOL ROCKSDB_BLOCK_CACHE (256M, 2G, bytes)
  MALLOC=glibc|jemalloc|mimalloc|tcmalloc (the servers' allocator, LD_PRELOAD)
  CNF (my.cnf included last) OUT SERVER_DIR PORT SYSBENCH REPORT_INTERVAL NO_CHARTS STOP_ON_ERROR
An external, already running server (none started, configured or stopped):
  TARGET=host:port[,user=NAME][,password=SECRET] or a socket path  ENGINE (its tables' engine, required)
  LABEL (its name in the reports; default "<ENGINE> (external)")  NO_PREPARE=1 (use its sbtest tables as they are)
  (the server variables above, ENGINES, MALLOC, CNF, SERVER_DIR and PORT are refused with TARGET)`)
}

func run(cfg Config) error {
	var err error
	if cfg.Sysbench, err = exec.LookPath(cfg.Sysbench); err != nil {
		return fmt.Errorf("sysbench not found (%v): run scripts/mariadb/setup.sh", err)
	}
	if _, err := server.MallocLibrary(cfg.Malloc); err != nil {
		return err
	}
	var r *harness.Run
	if cfg.External != nil {
		r, err = harness.BeginWith("sqlbench", cfg.Out, cfg.Lines(), func(server.Env) error {
			return cfg.External.CheckEngine(context.Background(), cfg.TableEngine)
		})
	} else {
		r, err = harness.Begin("sqlbench", cfg.Engines, cfg.Out, cfg.Lines())
	}
	if err != nil {
		return err
	}
	cfg.Out = r.Out
	if cfg.ServerDir == "" {
		cfg.ServerDir = filepath.Join(r.Env.Root, "build", "sql", "sqlbench-server")
	}
	raw := filepath.Join(cfg.Out, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	sw := &sweep{cfg: cfg, env: r.Env, raw: raw, tr: progress.New(time.Duration(cfg.Planned()) * time.Second)}
	runErr := sw.all(r.Ctx)
	if r.Interrupted() {
		sw.Note("interrupted: the results hold what was measured until then")
	}
	if len(sw.rows) > 0 {
		if err := writeResults(cfg, r.Stamp, sw); err != nil {
			fmt.Fprintln(os.Stderr, "sqlbench: writing results:", err)
		} else if !cfg.NoCharts {
			abs, _ := filepath.Abs(cfg.Out)
			if err := report.Plot(r.Env.Root, "sqlbench.py", abs); err != nil {
				fmt.Fprintln(os.Stderr, "sqlbench: charts:", err)
			}
		}
		fmt.Printf("\nresults in %s\n", cfg.Out)
	}
	r.End()
	if runErr != nil {
		return runErr
	}
	if n := sw.failed(); n > 0 {
		return fmt.Errorf("%d of %d runs failed (see summary.md)", n, len(sw.rows))
	}
	return nil
}

// sweep is the state of a run.
type sweep struct {
	cfg  Config
	env  server.Env
	raw  string
	tr   *progress.Tracker
	rows []Row
	harness.Servers
}

func (sw *sweep) failed() int {
	n := 0
	for _, r := range sw.rows {
		if r.Err != "" {
			n++
		}
	}
	return n
}

// all runs every table size and engine. An engine whose server fails to
// start, prepare or survive its runs is an error, reported at the end:
// the other engines still run, so what was measured is kept.
func (sw *sweep) all(ctx context.Context) error {
	var errs []error
	for _, size := range sw.cfg.TableSizes {
		for _, e := range sw.cfg.Engines {
			if ctx.Err() != nil {
				return nil
			}
			if err := sw.engine(ctx, e, size); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				fmt.Fprintln(os.Stderr, "sqlbench:", err)
				sw.Note(fmt.Sprintf("%s at %d rows per table: %s", e, size, report.FirstLine(err.Error())))
				errs = append(errs, err)
				if sw.cfg.StopOnError {
					break
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (sw *sweep) engine(ctx context.Context, engine string, size int) error {
	cfg := sw.cfg
	if cfg.External != nil {
		return sw.external(ctx, size)
	}
	sw.tr.Step(fmt.Sprintf("%s, %d x %d rows: starting the server", engine, cfg.Tables, size))
	s, err := server.StartRun(ctx, sw.env, server.Options{Dir: cfg.ServerDir, Port: cfg.Port, Preset: cfg.Preset,
		CnfFile: cfg.Cnf, Malloc: cfg.Malloc}, engine, schema)
	if err != nil {
		return err
	}
	defer sw.Stop(s)
	sw.Started(s)
	b := Bench{Path: cfg.Sysbench, Socket: s.Socket, DB: schema, Engine: engine, Tables: cfg.Tables, Size: size}
	sw.tr.Step(fmt.Sprintf("%s: preparing %d tables of %d rows", engine, cfg.Tables, size))
	t0 := time.Now()
	if _, err := b.Prepare(ctx, filepath.Join(sw.raw, fmt.Sprintf("%s_prepare_%d.log", engine, size))); err != nil {
		return fmt.Errorf("%s: preparing the tables: %w", engine, s.Why(err))
	}
	sw.tr.Done(time.Duration(10+cfg.Tables*size/40000) * time.Second)
	sw.tr.Printf("prepared in %s, %s on disk", progress.Round(time.Since(t0)),
		server.FormatBytes(s.EngineDataBytes(engine, schema)))
	return sw.workloads(ctx, engine, size, b, measured{
		dataBytes: func() int64 { return s.EngineDataBytes(engine, schema) }, why: s.Why, alive: s.Alive})
}

// measured is what the workload loop asks of the server under test.
type measured struct {
	dataBytes func() int64          // engine's data on disk (0: not known)
	why       func(err error) error // explains a failure (the server died...)
	alive     func() bool
}

// workloads runs every workload, thread count and iteration on the
// prepared tables of b, adding a row per measured run.
func (sw *sweep) workloads(ctx context.Context, engine string, size int, b Bench, s measured) error {
	cfg := sw.cfg
	per := time.Duration(cfg.Time+cfg.Warmup+1) * time.Second
	for _, w := range cfg.Workloads {
		for _, th := range cfg.Threads {
			for it := 1; it <= cfg.Iterations; it++ {
				if ctx.Err() != nil {
					return nil
				}
				row := Row{Engine: engine, Workload: w, Threads: th, TableSize: size, Iteration: it}
				sw.tr.Step(fmt.Sprintf("%s %s %d thread(s), iteration %d", engine, w, th, it))
				name := fmt.Sprintf("%s_%s_%dt_%d_%d", report.Slug(engine), w, th, size, it)
				var err error
				if cfg.Warmup > 0 {
					_, err = b.Run(ctx, w, th, cfg.Warmup, cfg.Interval, filepath.Join(sw.raw, name+"_warmup.log"))
				}
				if err == nil {
					row.R, err = b.Run(ctx, w, th, cfg.Time, cfg.Interval, filepath.Join(sw.raw, name+".log"))
				}
				row.DataBytes = s.dataBytes()
				sw.tr.Done(per)
				if ctx.Err() != nil {
					return nil
				}
				if err != nil {
					row.Err = s.why(err).Error()
					fmt.Fprintf(os.Stderr, "sqlbench: %s %s %d threads: %s\n", engine, w, th, row.Err)
					sw.rows = append(sw.rows, row)
					if !s.alive() || cfg.StopOnError {
						return fmt.Errorf("%s %s at %d threads failed: %s", engine, w, th, report.FirstLine(row.Err))
					}
					continue
				}
				sw.rows = append(sw.rows, row)
				sw.tr.Printf("%.0f tps, p95 %.2f ms, p99 %.2f ms, %d errors", row.R.TPS, row.R.P95, row.R.P99, row.R.Errors)
			}
		}
	}
	return nil
}
