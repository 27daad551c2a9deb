// Command tpcc is the TPC-C runner of the SQL suite, on go-tpc: for each
// engine it starts a fresh throw-away server (internal/server, one preset
// for all engines), builds the schema with --build-vu users (timed),
// lets background work settle, then per iteration runs a ramp-up whose
// figures are discarded, the measured run with --run-vu users, and
// go-tpc's consistency check (a failed check fails the run; --check-engines
// limits it to the engines named, --no-check skips it). It reports
// NOPM (New-Order per minute), TPM (all transactions per minute),
// avg/p95/p99 of each transaction, error counts and TPM over time, as
// CSV, Markdown (metric, TidesDB, InnoDB, MyRocks, advantage) and charts.
//
// --builds and --malloc compare builds of the TidesDB plugin and
// allocators (variants.go): with more than one variant, each iteration
// of each variant and engine gets a fresh server and schema, the variants
// alternating, and the report is per variant.
//
//	tpcc --preset quick                       # 2 warehouses, 1 minute per engine
//	tpcc --preset seed --engines tidesdb,innodb
//	tpcc --engines tidesdb,innodb --builds plain,pgo --malloc glibc,jemalloc --iterations 3
//
// --target host:port measures an external, already running server instead
// (external.go): none is started, configured or stopped; --engine is the
// engine go-tpc creates the tables with, --label the server's name in the
// reports, --no-prepare uses the tables already there (created, sharded
// and loaded by someone else).
//
//	tpcc --target 127.0.0.1:3520 --engine SPIDER --label "Spider, 2 shards" --no-prepare --warehouses 4
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/progress"
	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

const dbName = "tpcc"

// options are the command line.
type options struct {
	engines    []string
	warehouses int
	buildVU    int
	runVU      int
	rampup     float64 // minutes
	duration   float64 // minutes
	settle     int     // seconds
	iterations int
	interval   time.Duration
	isolation  string
	maxErrPct  float64
	preset     server.Preset
	cnf        string
	out        string
	serverDir  string
	port       int
	gotpc      string
	noCharts   bool
	sizeName   string
	builds     []Build
	mallocs    []string
	variants   []Variant // builds x mallocs; one: the run as without them
	ext        *external // --target: the external server measured (nil: tpcc starts its own)
	noCheck    bool      // --no-check: no consistency check after the runs
	// --check-engines: the engines whose runs are checked (nil: all). The
	// check is about the engine under test; a peer's can take longer than
	// its run with data far past its cache (InnoDB: over 13 minutes for 8
	// warehouses in a 64 MiB pool under a 512 MiB limit).
	checkEngines []string
}

// sizes are the quick default and the seed article's run (000: 100
// warehouses, 8 build and run users, 5 min ramp-up, 15 min, 90 s settle).
var sizes = map[string]map[string]string{
	"quick": {"warehouses": "2", "build-vu": "2", "run-vu": "4", "rampup": "0.25", "duration": "1", "settle": "5"},
	"seed": {"warehouses": "100", "build-vu": "8", "run-vu": "8", "rampup": "5", "duration": "15", "settle": "90",
		"cache": "2G"},
}

func parseFlags(args []string) (options, error) {
	var o options
	var err error
	fs := flag.NewFlagSet("tpcc", flag.ContinueOnError)
	engines := fs.String("engines", "tidesdb,innodb,rocksdb", "engines, in run order")
	size := fs.String("preset", "quick", "size preset quick|seed (flags given override it)")
	fs.IntVar(&o.warehouses, "warehouses", 0, "warehouses")
	fs.IntVar(&o.buildVU, "build-vu", 0, "users (threads) building the schema")
	fs.IntVar(&o.runVU, "run-vu", 0, "users (threads) running the mix")
	fs.Float64Var(&o.rampup, "rampup", -1, "ramp-up minutes before each measured run (discarded)")
	fs.Float64Var(&o.duration, "duration", 0, "measured minutes per run")
	fs.IntVar(&o.settle, "settle", -1, "seconds between the schema build and the first run")
	fs.IntVar(&o.iterations, "iterations", 1, "measured runs per engine (each checked)")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "timeline bucket")
	fs.StringVar(&o.isolation, "isolation", "", "READ-COMMITTED or REPEATABLE-READ (default: the preset's, READ-COMMITTED)")
	fs.Float64Var(&o.maxErrPct, "max-err-pct", 5, "a run whose failed transactions exceed this percentage fails")
	durability := fs.String("durability", server.Relaxed, "durability preset relaxed|durable")
	memory := fs.String("memory", server.Equal, "memory preset equal|seed")
	cache := fs.String("cache", "", "cache size of every engine (default: the size preset's)")
	memLimit := fs.String("mem-limit", "", "memory limit of each server with --memory equal")
	compression := fs.String("compression", "NONE", "compression of every engine's tables: NONE, LZ4 or SNAPPY (InnoDB: page compression; it has no ZSTD)")
	rocksLimit := fs.String("rocksdb-mem-limit", "", "MyRocks's server's limit instead, at least --mem-limit (labelled: MyRocks is OOM-killed at small limits)")
	fs.StringVar(&o.cnf, "cnf", "", "a my.cnf included after the preset")
	fs.StringVar(&o.out, "out", "", "output directory (default results/tpcc-<stamp>)")
	fs.StringVar(&o.serverDir, "server-dir", "", "server directory (default build/sql/tpcc-server)")
	fs.IntVar(&o.port, "port", 3440, "TCP port of the server")
	fs.StringVar(&o.gotpc, "gotpc", "", "go-tpc binary (default build/go-tpc/go-tpc)")
	fs.BoolVar(&o.noCharts, "no-charts", false, "skip the charts")
	builds := fs.String("builds", "plain", "plugin builds to compare: plain, pgo, lto, pgo-lto (build/mariadb[-pgo|-lto|-pgo-lto]/plugin) or name=DIR")
	mallocs := fs.String("malloc", server.Glibc, "allocators to compare: "+strings.Join(server.Allocators, ", ")+" (LD_PRELOAD into the server)")
	tgt := fs.String("target", "", "host:port[,user=NAME][,password=SECRET] of an external, already running server to measure (none is started)")
	engine := fs.String("engine", "", "with --target: the engine of its tables (go-tpc's default_storage_engine), required")
	label := fs.String("label", "", "with --target: its name in the reports (default \"<engine> (external)\")")
	noPrepare := fs.Bool("no-prepare", false, "with --target: use the tpcc tables already there (loaded with --warehouses) instead of building them")
	fs.BoolVar(&o.noCheck, "no-check", false, "skip go-tpc's consistency check after each run")
	checkEngines := fs.String("check-engines", "", "check only these engines' runs (default: every engine's); the others' are reported as not checked")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if o.ext, err = parseExternal(*tgt, *engine, *label, *noPrepare, given); err != nil {
		return o, err
	}
	if o.ext != nil {
		*engines = "tidesdb" // a placeholder for the checks below; o.engines is set to the label after them
	}
	defs, ok := sizes[*size]
	if !ok {
		return o, fmt.Errorf("--preset %q: want quick or seed", *size)
	}
	o.sizeName = *size
	if o.engines, err = server.ParseEngines(*engines); err != nil {
		return o, fmt.Errorf("--engines: %w", err)
	}
	if o.checkEngines, err = parseCheckEngines(*checkEngines, o.engines, o.noCheck); err != nil {
		return o, err
	}
	if o.builds, err = parseBuilds(*builds); err != nil {
		return o, err
	}
	if o.mallocs, err = server.ParseMallocs(*mallocs); err != nil {
		return o, fmt.Errorf("--malloc: %w", err)
	}
	o.variants = crossVariants(o.builds, o.mallocs)
	setInt := func(dst *int, name string, unset int) {
		if *dst == unset && err == nil {
			_, err = fmt.Sscan(defs[name], dst)
		}
	}
	setInt(&o.warehouses, "warehouses", 0)
	setInt(&o.buildVU, "build-vu", 0)
	setInt(&o.runVU, "run-vu", 0)
	setInt(&o.settle, "settle", -1)
	if o.rampup < 0 && err == nil {
		_, err = fmt.Sscan(defs["rampup"], &o.rampup)
	}
	if o.duration == 0 && err == nil {
		_, err = fmt.Sscan(defs["duration"], &o.duration)
	}
	if err != nil {
		return o, err
	}
	switch {
	case o.warehouses < 1:
		return o, fmt.Errorf("--warehouses %d: want at least 1", o.warehouses)
	case o.buildVU < 1 || o.runVU < 1:
		return o, fmt.Errorf("--build-vu and --run-vu want at least 1 user")
	case o.duration <= 0 || o.duration*60 < o.interval.Seconds():
		return o, fmt.Errorf("--duration %.2f minutes: want at least one --interval (%s)", o.duration, o.interval)
	case o.rampup < 0 || o.settle < 0:
		return o, fmt.Errorf("--rampup and --settle must not be negative")
	case o.iterations < 1:
		return o, fmt.Errorf("--iterations %d: want at least 1", o.iterations)
	case o.interval < time.Second:
		return o, fmt.Errorf("--interval %s: want at least 1s", o.interval)
	case o.maxErrPct < 0 || o.maxErrPct > 100:
		return o, fmt.Errorf("--max-err-pct %.1f: want 0..100", o.maxErrPct)
	}

	p := server.DefaultPreset()
	p.Durability, p.Memory = *durability, *memory
	comp := strings.ToUpper(*compression)
	p.TidesDBCompression, p.InnoDBCompression, p.RocksDBCompression = comp, comp, comp
	c := *cache
	if c == "" {
		c = defs["cache"]
	}
	if c != "" {
		b, err := server.ParseBytes(c)
		if err != nil {
			return o, fmt.Errorf("--cache: %w", err)
		}
		p.TidesDBCache, p.InnoDBCache, p.RocksDBCache = b, b, b
		if need := 2*b + 2*p.WriteBuffer + 256<<20; need > p.MemLimit {
			p.MemLimit = need
		}
	}
	if *memLimit != "" {
		if p.MemLimit, err = server.ParseBytes(*memLimit); err != nil {
			return o, fmt.Errorf("--mem-limit: %w", err)
		}
	}
	if *rocksLimit != "" {
		if p.RocksDBMemLimit, err = server.ParseBytes(*rocksLimit); err != nil {
			return o, fmt.Errorf("--rocksdb-mem-limit: %w", err)
		}
	}
	if p.Memory == server.Seed {
		p.MemLimit = 0
	}
	switch strings.ToUpper(o.isolation) {
	case "", "RC", "READ-COMMITTED":
		p.Isolation = "READ-COMMITTED"
	case "RR", "REPEATABLE-READ":
		p.Isolation = "REPEATABLE-READ"
	default:
		return o, fmt.Errorf("--isolation %q: want READ-COMMITTED or REPEATABLE-READ", o.isolation)
	}
	o.preset = p
	if o.ext != nil {
		o.engines = []string{o.ext.label}
	}
	return o, p.Validate()
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "tpcc:", err)
		}
		os.Exit(1)
	}
}

// Lines describe the run, printed with the results.
func (o options) Lines() []string {
	if o.ext != nil {
		return o.externalLines()
	}
	l := []string{
		fmt.Sprintf("size preset: %s; %d warehouses; schema built by %d users; %d users run %.2f min after a %.2f min ramp-up (discarded); %d s settle; %d iteration(s); go-tpc isolation %s",
			o.sizeName, o.warehouses, o.buildVU, o.runVU, o.duration, o.rampup, o.settle, o.iterations, o.preset.Isolation),
		"engines: " + strings.Join(o.engines, ", "),
	}
	var builds []string
	for _, b := range o.builds {
		builds = append(builds, b.Describe())
	}
	if o.multi() {
		var names []string
		for _, v := range o.variants {
			names = append(names, v.Name())
		}
		l = append(l, "variants (TidesDB plugin build/allocator): "+strings.Join(names, ", ")+
			"; alternated across the iterations, each iteration of each variant and engine on a fresh server with a freshly built schema",
			"plugin builds: "+strings.Join(builds, ", ")+"; allocators (LD_PRELOAD, checked mapped in each server): "+strings.Join(o.mallocs, ", "))
	} else {
		l = append(l, "TidesDB plugin build: "+strings.Join(builds, ", ")+"; allocator: "+server.MallocSummary(o.mallocs[0]))
	}
	return append(l, o.preset.Summary()...)
}

// multi reports whether several variants are compared.
func (o options) multi() bool { return len(o.variants) > 1 }

func (o options) planned() time.Duration {
	per := float64(o.warehouses*20+o.settle) + float64(o.iterations)*(o.rampup+o.duration)*60 + float64(o.iterations*10)
	if o.multi() {
		// every iteration builds its own schema
		per = float64(o.iterations) * (float64(o.warehouses*20+o.settle) + (o.rampup+o.duration)*60 + 10) * float64(len(o.variants))
	}
	return time.Duration(per*float64(len(o.engines))) * time.Second
}

func run(o options) error {
	if o.gotpc == "" {
		if env, err := server.FindEnv(); err == nil {
			o.gotpc = filepath.Join(env.Root, "build", "go-tpc", "go-tpc")
		}
	}
	if _, err := os.Stat(o.gotpc); err != nil {
		return fmt.Errorf("go-tpc not found at %q: build it with scripts/mariadb/common.sh's ensure_gotpc (scripts/bench.sh does)", o.gotpc)
	}
	for _, m := range o.mallocs {
		if _, err := server.MallocLibrary(m); err != nil {
			return err
		}
	}
	r, err := harness.BeginWith("tpcc", o.out, o.Lines(), func(env server.Env) error {
		if o.ext != nil {
			return o.ext.t.CheckEngine(context.Background(), o.ext.engine)
		}
		for _, b := range o.builds {
			if err := b.Check(env, o.engines); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.out = r.Out
	env, ctx := r.Env, r.Ctx
	if o.serverDir == "" {
		o.serverDir = filepath.Join(env.Root, "build", "sql", "tpcc-server")
	}
	logs := filepath.Join(o.out, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	rn := &runner{o: o, env: env, logs: logs, tr: progress.New(o.planned())}
	var errs []error
	if o.multi() {
		for _, j := range schedule(o.iterations, len(o.variants), o.engines) {
			if ctx.Err() != nil {
				break
			}
			before := len(rn.results)
			if err := rn.engine(ctx, j.Variant, j.Engine, j.Iteration, 1); err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "tpcc: %s %s iteration %d: %v\n", o.variants[j.Variant].Name(), j.Engine, j.Iteration, err)
				if len(rn.results) == before {
					// failed before its measured run: counted against the variant
					rn.results = append(rn.results, Result{Engine: j.Engine, Iteration: j.Iteration, Variant: j.Variant,
						Err: err.Error()})
				} else {
					rn.Note(fmt.Sprintf("%s %s iteration %d: %s", o.variants[j.Variant].Name(), j.Engine, j.Iteration,
						report.FirstLine(err.Error())))
				}
			}
		}
	} else {
		for _, e := range o.engines {
			if ctx.Err() != nil {
				break
			}
			if err := rn.engine(ctx, 0, e, 1, o.iterations); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "tpcc:", err)
				rn.Note(report.FirstLine(err.Error()))
				errs = append(errs, err)
			}
		}
	}
	if r.Interrupted() {
		rn.Note("interrupted: the results hold what was measured until then")
	}
	if len(rn.results) > 0 {
		if err := writeResults(o, r.Stamp, rn); err != nil {
			fmt.Fprintln(os.Stderr, "tpcc: writing results:", err)
		} else if o.multi() && !o.noCharts {
			fmt.Println("charts skipped: they show one figure per engine, and this run has several variants (see the table)")
		} else if !o.noCharts {
			abs, _ := filepath.Abs(o.out)
			if err := report.Plot(env.Root, "tpcc.py", abs); err != nil {
				fmt.Fprintln(os.Stderr, "tpcc: charts:", err)
			}
		}
		fmt.Printf("\nresults in %s\n", o.out)
	}
	r.End()
	for _, r := range rn.results {
		if r.Err != "" {
			what := r.Engine
			if o.multi() {
				what = o.variants[r.Variant].Name() + " " + r.Engine
			}
			errs = append(errs, fmt.Errorf("%s iteration %d: %s", what, r.Iteration, report.FirstLine(r.Err)))
		}
	}
	return errors.Join(errs...)
}

// Result is one measured run of one engine.
type Result struct {
	Engine       string
	Iteration    int
	Variant      int    // index into options.variants
	TidesDBBuild string // the TidesDB server's tidesdb_build ("" on other engines)
	BuildSecs    float64
	Out          RunOutput
	Conditions   int // consistency conditions checked
	DataBytes    int64
	Err          string
}

type runner struct {
	o       options
	env     server.Env
	logs    string
	tr      *progress.Tracker
	results []Result
	harness.Servers
}

// engine runs iterations first..first+count-1 of variant vi on engine:
// one fresh server, the schema built once, then each iteration's ramp-up,
// measured run and check.
func (rn *runner) engine(ctx context.Context, vi int, engine string, first, count int) error {
	o := rn.o
	if o.ext != nil {
		return rn.external(ctx, first, count)
	}
	v := o.variants[vi]
	what, file := engine, engine
	if o.multi() {
		what = fmt.Sprintf("%s %s iteration %d", v.Name(), engine, first)
		file = fmt.Sprintf("%s_%s_%d", v.File(), engine, first)
	}
	rn.tr.Step(what + ": starting the server")
	s, err := server.StartRun(ctx, rn.env, server.Options{Dir: o.serverDir, Port: o.port, Preset: o.preset, CnfFile: o.cnf,
		Malloc: v.Malloc, PluginDir: v.Build.PluginDir(rn.env)}, engine, dbName)
	if err != nil {
		return err
	}
	defer rn.Stop(s)
	rn.Started(s)
	if s.TidesDBBuild != "" {
		rn.tr.Printf("%s; tidesdb_build %s", s.MallocNote(), s.TidesDBBuild)
	} else {
		rn.tr.Printf("%s", s.MallocNote())
	}
	g := GoTPC{Path: o.gotpc, Port: o.port, DB: dbName, Warehouses: o.warehouses, Engine: engine, Isolation: 2}
	return rn.measure(ctx, serverJob{vi: vi, engine: engine, what: what, file: file, first: first, count: count, g: g, srv: s,
		tidesDBBuild: s.TidesDBBuild, dataBytes: func() int64 { return s.EngineDataBytes(engine, dbName) }})
}

// serverJob is what measure needs of one server under test.
type serverJob struct {
	vi                 int
	engine, what, file string
	first, count       int
	g                  GoTPC
	srv                measuredServer
	tidesDBBuild       string
	dataBytes          func() int64 // engine's data on disk (0: not known)
	noPrepare          bool         // the schema is there already: not built
}

// measuredServer is the server under test: a server.Run tpcc started, or
// an external one.
type measuredServer interface {
	Open(db string) (*sql.DB, error)
	Why(err error) error // explains a failure (the server died...)
	Alive() bool
}

// measure builds the schema (unless j.noPrepare), checks its engine, then
// runs each iteration's ramp-up, measured run and check.
func (rn *runner) measure(ctx context.Context, j serverJob) error {
	o := rn.o
	g, s, engine, what, file := j.g, j.srv, j.engine, j.what, j.file
	if o.preset.Isolation == "REPEATABLE-READ" {
		g.Isolation = 4
	}

	var build float64
	if !j.noPrepare {
		rn.tr.Step(fmt.Sprintf("%s: building %d warehouses with %d users", what, o.warehouses, o.buildVU))
		t0 := time.Now()
		if err := g.Prepare(ctx, o.buildVU, filepath.Join(rn.logs, file+"_prepare.log")); err != nil {
			return fmt.Errorf("%s: building the schema: %w", engine, s.Why(err))
		}
		build = time.Since(t0).Seconds()
		rn.tr.Done(time.Duration(o.warehouses*20) * time.Second)
	}
	if j.noPrepare {
		rn.tr.Step(what + ": checking the existing tables")
	}
	if err := tablesUse(ctx, s, g.Engine); err != nil {
		return err
	}
	switch {
	case j.noPrepare:
		rn.tr.Printf("the schema was there (--no-prepare); settling %d s", o.settle)
	case o.ext != nil:
		rn.tr.Printf("built in %.0f s; settling %d s", build, o.settle)
	default:
		rn.tr.Printf("built in %.0f s, %s on disk; settling %d s", build, server.FormatBytes(j.dataBytes()), o.settle)
	}
	if !sleep(ctx, time.Duration(o.settle)*time.Second) {
		return nil
	}
	rn.tr.Done(time.Duration(o.settle) * time.Second)

	iterLabel := func(it int) string {
		if o.multi() {
			return what
		}
		return fmt.Sprintf("%s iteration %d", engine, it)
	}
	dur := time.Duration(o.duration * float64(time.Minute))
	ramp := time.Duration(o.rampup * float64(time.Minute))
	for it := j.first; it < j.first+j.count; it++ {
		res := Result{Engine: engine, Iteration: it, Variant: j.vi, TidesDBBuild: j.tidesDBBuild, BuildSecs: build}
		name := fmt.Sprintf("%s_%d", report.Slug(engine), it)
		if o.multi() {
			name = file
		}
		var err error
		if ramp > 0 {
			rn.tr.Step(fmt.Sprintf("%s: ramp-up %s (discarded)", iterLabel(it), ramp))
			_, err = g.Run(ctx, o.runVU, ramp, o.interval, filepath.Join(rn.logs, name+"_rampup.log"))
		}
		if err == nil {
			rn.tr.Step(fmt.Sprintf("%s: %d users for %s", iterLabel(it), o.runVU, dur))
			res.Out, err = g.Run(ctx, o.runVU, dur, o.interval, filepath.Join(rn.logs, name+"_run.log"))
		}
		rn.tr.Done(ramp + dur)
		if err == nil {
			err = errorShare(res.Out, o.maxErrPct)
		}
		checked := o.checks(engine)
		if err == nil && !checked {
			rn.tr.Printf("NOPM %.0f, TPM %.0f, %d errors; no consistency check (%s)", res.Out.TPMC, res.Out.TPMTotal, res.Out.Errors(), o.noCheckFlag())
		} else if err == nil {
			rn.tr.Printf("NOPM %.0f, TPM %.0f, %d errors; checking consistency", res.Out.TPMC, res.Out.TPMTotal, res.Out.Errors())
			err = historyIndex(ctx, s, !j.noPrepare)
			if err == nil {
				res.Conditions, err = g.Check(ctx, CheckThreads(o.runVU, runtime.NumCPU()), filepath.Join(rn.logs, name+"_check.log"))
			}
		}
		res.DataBytes = j.dataBytes()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			res.Err = s.Why(err).Error()
			fmt.Fprintf(os.Stderr, "tpcc: %s: %s\n", iterLabel(it), res.Err)
		} else if checked {
			rn.tr.Printf("check passed (%d conditions)", res.Conditions)
		}
		rn.results = append(rn.results, res)
		if !s.Alive() {
			return fmt.Errorf("%s: the server died", engine)
		}
	}
	return nil
}

// parseCheckEngines reads --check-engines: engines among those run, not
// with --no-check. Empty: nil, every engine is checked.
func parseCheckEngines(s string, engines []string, noCheck bool) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if noCheck {
		return nil, fmt.Errorf("--check-engines and --no-check contradict each other")
	}
	list, err := server.ParseEngines(s)
	if err != nil {
		return nil, fmt.Errorf("--check-engines: %w", err)
	}
	for _, e := range list {
		if !slices.Contains(engines, e) {
			return nil, fmt.Errorf("--check-engines: %s is not among the engines run (%s)", e, strings.Join(engines, ", "))
		}
	}
	return list, nil
}

// checks reports whether engine's runs get the consistency check.
func (o options) checks(engine string) bool {
	return !o.noCheck && (o.checkEngines == nil || slices.Contains(o.checkEngines, engine))
}

// noCheckFlag names the flag that turned a check off.
func (o options) noCheckFlag() string {
	if o.noCheck {
		return "--no-check"
	}
	return "--check-engines"
}

// errorShare fails a run whose failed transactions exceed maxPct percent.
func errorShare(r RunOutput, maxPct float64) error {
	total := r.Count() + r.Errors()
	if total > 0 && float64(r.Errors())*100 > maxPct*float64(total) {
		return fmt.Errorf("%d of %d transactions failed (more than %.1f%%)", r.Errors(), total, maxPct)
	}
	return nil
}

// tablesUse checks that go-tpc's tables were made by the engine under test
// (a silently substituted engine would measure the wrong thing).
func tablesUse(ctx context.Context, s measuredServer, engine string) error {
	db, err := s.Open(dbName)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", dbName)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var t, e string
		if err := rows.Scan(&t, &e); err != nil {
			return err
		}
		if !strings.EqualFold(e, engine) {
			return fmt.Errorf("table %s.%s uses engine %s, not %s", dbName, t, e, engine)
		}
		n++
	}
	if n < 9 {
		return fmt.Errorf("%d TPC-C tables in %s after the build, want 9", n, dbName)
	}
	return rows.Err()
}

// historyIndex indexes history on the customer columns once: check
// condition 3.3.2.10 sums history per customer, and go-tpc's history has
// no such index (a quadratic scan for every engine). The data is unchanged.
// With alter false (tables tpcc did not build) a missing index is an error
// instead: the tables are someone else's.
func historyIndex(ctx context.Context, s measuredServer, alter bool) error {
	db, err := s.Open(dbName)
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? "+
		"AND TABLE_NAME = 'history' AND INDEX_NAME = 'idx_h_check'", dbName).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if !alter {
		return fmt.Errorf("history has no index idx_h_check (h_c_w_id, h_c_d_id, h_c_id), which go-tpc's check needs (3.3.2.10 scans history per customer): " +
			"add it to the tables, or run with --no-check")
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE history ADD INDEX idx_h_check (h_c_w_id, h_c_d_id, h_c_id)"); err != nil {
		return fmt.Errorf("indexing history for the consistency check: %w", err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
