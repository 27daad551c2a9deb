// Command crashtpcc is the crash test of ENGINE=TidesDB under TPC-C: a
// throw-away server (internal/server, the relaxed and durable presets) is
// killed with SIGKILL at a random moment of a TPC-C run, restarted, and
// checked, cycle after cycle on the same database.
//
// During each cycle go-tpc runs the TPC-C mix (--threads users) and this
// process runs New-Order transactions of its own (--clients connections,
// neworder.go), logging each order (w_id, d_id, o_id) in memory only after
// its COMMIT returned OK: this process is not the server and survives the
// kill. After the restart (timed: recovery is restart to ready):
//   - every order logged in the cycle is wholly present or wholly absent
//     (its orders row, its order lines, a new_order row unless delivered);
//     at the durable preset (TidesDB sync FULL) none may be absent; at the
//     relaxed preset (sync NONE) the absent ones are counted;
//   - every order found in an earlier cycle is still present;
//   - go-tpc's consistency check passes;
//   - every secondary index of the TPC-C tables has one entry per row.
//
// It exits non-zero on a lost order at the durable preset, a partial
// order, an earlier order gone, a failed check or index, or a server that
// does not restart.
//
//	crashtpcc --cycles 3                     # quick: 3 cycles per preset
//	crashtpcc --cycles 20 --kill-max 30s     # the acceptance run
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/server"
)

const dbName = "tpcc"

type options struct {
	cycles     int
	presets    []string
	warehouses int
	threads    int // go-tpc users
	clients    int // New-Order driver connections
	killMin    time.Duration
	killMax    time.Duration
	seed       int64
	cache      int64
	writeBuf   int64
	serverDir  string
	port       int
	gotpc      string
	out        string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("crashtpcc", flag.ContinueOnError)
	fs.IntVar(&o.cycles, "cycles", 3, "kill/restart cycles per durability preset")
	presets := fs.String("presets", server.Relaxed+","+server.Durable, "durability presets, in run order")
	fs.IntVar(&o.warehouses, "warehouses", 1, "TPC-C warehouses")
	fs.IntVar(&o.threads, "threads", 2, "go-tpc users running the TPC-C mix")
	fs.IntVar(&o.clients, "clients", 2, "connections running the logged New-Order transactions")
	fs.DurationVar(&o.killMin, "kill-min", 3*time.Second, "earliest kill, from the start of a cycle's load")
	fs.DurationVar(&o.killMax, "kill-max", 12*time.Second, "latest kill")
	fs.Int64Var(&o.seed, "seed", 0, "random seed (0: from the clock; printed)")
	cache := fs.String("cache", "64M", "TidesDB block cache")
	wb := fs.String("write-buffer", "16M", "TidesDB unified memtable write buffer (small: flushes during the run)")
	fs.StringVar(&o.serverDir, "server-dir", "", "server directory (default build/crash-tpcc/server)")
	fs.IntVar(&o.port, "port", 3480, "TCP port of the server")
	fs.StringVar(&o.gotpc, "gotpc", "", "go-tpc binary (default build/go-tpc/go-tpc)")
	fs.StringVar(&o.out, "out", "", "output directory: per-cycle logs, cycles.csv, summary.md (default build/crash-tpcc/out)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, p := range strings.FieldsFunc(*presets, func(r rune) bool { return r == ',' || r == ' ' }) {
		if p != server.Relaxed && p != server.Durable {
			return o, fmt.Errorf("--presets: %q: want %s and/or %s", p, server.Relaxed, server.Durable)
		}
		o.presets = append(o.presets, p)
	}
	var err error
	if o.cache, err = server.ParseBytes(*cache); err != nil {
		return o, fmt.Errorf("--cache: %w", err)
	}
	if o.writeBuf, err = server.ParseBytes(*wb); err != nil {
		return o, fmt.Errorf("--write-buffer: %w", err)
	}
	switch {
	case len(o.presets) == 0:
		return o, fmt.Errorf("--presets: none given")
	case o.cycles < 1:
		return o, fmt.Errorf("--cycles %d: want at least 1", o.cycles)
	case o.warehouses < 1 || o.threads < 1 || o.clients < 1:
		return o, fmt.Errorf("--warehouses, --threads and --clients want at least 1")
	case o.killMin < time.Second || o.killMax < o.killMin:
		return o, fmt.Errorf("--kill-min %s, --kill-max %s: want 1s <= kill-min <= kill-max", o.killMin, o.killMax)
	case o.port < 1 || o.port > 65535:
		return o, fmt.Errorf("--port %d", o.port)
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1000000007
	}
	_, err = o.preset(server.Durable)
	return o, err
}

// preset is the internal/server preset of durability d, with this test's
// small cache and write buffer.
func (o options) preset(d string) (server.Preset, error) {
	p := server.DefaultPreset()
	p.Durability = d
	p.TidesDBCache, p.WriteBuffer = o.cache, o.writeBuf
	return p, p.Validate()
}

func (o options) lines() []string {
	l := []string{fmt.Sprintf("crash under TPC-C: %d cycle(s) per preset (%s); %d warehouse(s); go-tpc %d users + %d logged New-Order clients; kill -9 at a random %s..%s into each cycle's load; seed %d",
		o.cycles, strings.Join(o.presets, ", "), o.warehouses, o.threads, o.clients, o.killMin, o.killMax, o.seed)}
	for _, d := range o.presets {
		p, _ := o.preset(d)
		l = append(l, fmt.Sprintf("%s: TidesDB sync %s (tidesdb_default_sync_mode, tidesdb_unified_memtable_sync_mode); cache %s, write buffer %s",
			d, p.TidesDBSyncMode(), server.FormatBytes(p.TidesDBCache), server.FormatBytes(p.WriteBuffer)))
	}
	return l
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "crashtpcc:", err)
		}
		os.Exit(1)
	}
}

type tester struct {
	o      options
	env    server.Env
	ctx    context.Context
	g      GoTPC
	logs   string
	rnd    *rand.Rand
	srv    *server.Server
	log    AckLog
	kept   []Order // orders present after an earlier restart
	cycles []Cycle
	cycleN int
}

func run(o options) error {
	// The driver's connections break at every kill: their errors are
	// counted, not printed by the driver's logger.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	env, err := server.FindEnv()
	if err != nil {
		return err
	}
	if o.serverDir == "" {
		o.serverDir = filepath.Join(env.Root, "build", "crash-tpcc", "server")
	}
	if o.out == "" {
		o.out = filepath.Join(env.Root, "build", "crash-tpcc", "out")
	}
	if o.gotpc == "" {
		o.gotpc = filepath.Join(env.Root, "build", "go-tpc", "go-tpc")
	}
	if _, err := os.Stat(o.gotpc); err != nil {
		return fmt.Errorf("go-tpc not found at %q: build it with scripts/mariadb/common.sh's ensure_gotpc", o.gotpc)
	}
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	r, err := harness.Begin("crashtpcc", []string{"TidesDB"}, o.out, o.lines())
	if err != nil {
		return err
	}
	defer r.End()
	t := &tester{o: o, env: r.Env, ctx: r.Ctx, logs: filepath.Join(o.out, "logs"), rnd: rand.New(rand.NewSource(o.seed)),
		g: GoTPC{Path: o.gotpc, Port: o.port, DB: dbName, Warehouses: o.warehouses}}
	if err := os.MkdirAll(t.logs, 0o755); err != nil {
		return err
	}
	defer server.StopAll()
	start := time.Now()
	runErr := t.all()
	if len(t.cycles) > 0 {
		if err := t.write(time.Since(start)); err != nil {
			fmt.Fprintln(os.Stderr, "crashtpcc: writing results:", err)
		}
	}
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	for _, c := range t.cycles {
		if f := c.Failures(); len(f) > 0 {
			errs = append(errs, fmt.Errorf("%s cycle %d: %s", c.Preset, c.N, strings.Join(f, "; ")))
		}
	}
	if len(errs) == 0 {
		fmt.Printf("crashtpcc: passed: %d cycles in %.0f s (results in %s)\n", len(t.cycles), time.Since(start).Seconds(), o.out)
	} else {
		fmt.Printf("crashtpcc: FAILED (results and server logs in %s; the server directory %s is kept)\n", o.out, o.serverDir)
	}
	return errors.Join(errs...)
}

// all loads the schema once, then runs every preset's cycles.
func (t *tester) all() error {
	o := t.o
	for i, d := range o.presets {
		p, _ := o.preset(d)
		if i == 0 {
			fmt.Printf("crashtpcc: fresh server in %s (port %d); loading %d warehouse(s)\n", o.serverDir, o.port, o.warehouses)
			if err := t.start(p, true); err != nil {
				return err
			}
			if err := t.load(); err != nil {
				return err
			}
		} else {
			// Stop cleanly, start with the next preset's settings.
			if err := t.srv.Stop(); err != nil {
				return err
			}
			if err := t.start(p, false); err != nil {
				return err
			}
		}
		mode, err := t.syncMode()
		if err != nil {
			return err
		}
		if mode != "ON/"+p.TidesDBSyncMode() {
			return fmt.Errorf("preset %s: the server runs with tidesdb_unified_memtable/_sync_mode %s, want ON/%s", d, mode, p.TidesDBSyncMode())
		}
		fmt.Printf("crashtpcc: preset %s: the server runs with tidesdb_unified_memtable/_sync_mode %s (the WAL sync of every table)\n", d, mode)
		fmt.Println(cycleHeader())
		for c := 1; c <= o.cycles; c++ {
			if t.ctx.Err() != nil {
				return fmt.Errorf("interrupted")
			}
			cy, err := t.cycle(p, c)
			if cy != nil {
				t.cycles = append(t.cycles, *cy)
				fmt.Println(cy.Line())
				for _, pr := range cy.Problems {
					fmt.Println("    " + pr)
				}
			}
			if err != nil {
				return err
			}
		}
	}
	return t.srv.Stop()
}

func (t *tester) start(p server.Preset, fresh bool) error {
	s, err := server.Start(t.ctx, t.env, server.Options{Dir: t.o.serverDir, Port: t.o.port, Preset: p,
		Engines: []string{"TidesDB"}, Fresh: fresh})
	if err != nil {
		return err
	}
	t.srv = s
	return nil
}

// syncMode reads the WAL sync mode the server runs with: in unified
// memtable mode the library syncs every table's writes by
// tidesdb_unified_memtable_sync_mode (src/db/options.c).
func (t *tester) syncMode() (string, error) {
	db, err := t.srv.Open("")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var on, mode string
	err = db.QueryRowContext(t.ctx, "SELECT @@tidesdb_unified_memtable, @@tidesdb_unified_memtable_sync_mode").Scan(&on, &mode)
	if on == "1" {
		on = "ON"
	}
	return on + "/" + mode, err
}

// load builds the TPC-C schema on TidesDB and indexes history for the
// check (go-tpc's condition 3.3.2.10 sums history per customer).
func (t *tester) load() error {
	db, err := t.srv.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(t.ctx, "CREATE DATABASE "+dbName); err != nil {
		return err
	}
	t0 := time.Now()
	if err := t.g.Prepare(t.ctx, 2, filepath.Join(t.logs, "prepare.log")); err != nil {
		return t.srv.Why(err)
	}
	if _, err := db.ExecContext(t.ctx, "ALTER TABLE "+dbName+".history ADD INDEX idx_h_check (h_c_w_id, h_c_d_id, h_c_id)"); err != nil {
		return fmt.Errorf("indexing history: %w", err)
	}
	var n int
	if err := db.QueryRowContext(t.ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND ENGINE = 'TidesDB'",
		dbName).Scan(&n); err != nil {
		return err
	}
	if n != 9 {
		return fmt.Errorf("%d of the 9 TPC-C tables use TidesDB", n)
	}
	fmt.Printf("crashtpcc: loaded in %.0f s\n", time.Since(t0).Seconds())
	return nil
}

// cycle runs the load, kills the server, restarts it and checks. A nil
// Cycle with an error: the cycle could not run; a Cycle with an error:
// stop here (the server did not come back).
func (t *tester) cycle(p server.Preset, n int) (*Cycle, error) {
	t.cycleN++
	id := t.cycleN
	name := fmt.Sprintf("%s-%02d", p.Durability, n)
	c := &Cycle{Preset: p.Durability, N: n}
	killAt := t.o.killMin + time.Duration(t.rnd.Int63n(int64(t.o.killMax-t.o.killMin)+1))

	load, err := t.g.StartRun(t.o.threads, killAt+10*time.Minute, filepath.Join(t.logs, name+"-gotpc-run.log"))
	if err != nil {
		return nil, err
	}
	db, err := t.srv.Open(dbName)
	if err != nil {
		load.Stop()
		return nil, err
	}
	db.SetMaxOpenConns(t.o.clients)
	ctx, cancel := context.WithCancel(t.ctx)
	drv := &NewOrderDriver{DB: db, Warehouses: t.o.warehouses, Cycle: id, Log: &t.log, Seed: t.o.seed*1000 + int64(id)}
	drvDone := make(chan struct{})
	t0 := time.Now()
	go func() { drv.Run(ctx, t.o.clients); close(drvDone) }()

	select {
	case <-time.After(killAt):
	case <-t.ctx.Done():
	}
	c.KillAt = time.Since(t0).Seconds()
	gotpcExited := load.Exited()
	t.srv.Kill()
	cancel()
	<-drvDone
	load.Stop()
	db.Close()
	if gotpcExited {
		c.Problems = append(c.Problems, "go-tpc's run ended before the kill (see "+name+"-gotpc-run.log)")
	}
	acked, doubt := t.log.Cycle(id)
	c.Acked, c.InDoubt, c.DriverErrors = len(acked), len(doubt), drv.Errors
	if len(acked) == 0 {
		c.Problems = append(c.Problems, "no New-Order was acknowledged before the kill (first error: "+drv.First+")")
	}

	r0 := time.Now()
	if err := t.start(p, false); err != nil {
		c.RestartErr = err.Error()
		return c, fmt.Errorf("the server did not restart after the kill: %w", err)
	}
	c.Recovery = time.Since(r0).Seconds()
	defer copyFile(t.srv.Log, filepath.Join(t.logs, name+"-error.log"))

	vdb, err := t.srv.Open(dbName)
	if err != nil {
		return c, err
	}
	defer vdb.Close()
	all := append(append([]Order{}, acked...), doubt...)
	all = append(all, t.kept...)
	found, err := Lookup(t.ctx, vdb, all)
	if err != nil {
		c.Problems = append(c.Problems, "reading the logged orders: "+err.Error())
		c.VerifyErr = true
	} else {
		v := Judge(acked, found)
		c.Present, c.Lost, c.Holes, c.Partial = v.Present, v.Lost, v.Holes, v.Partial
		c.Problems = append(c.Problems, v.Problems...)
		if v.Lost > 0 {
			var keys []string
			for _, o := range v.LostKeys {
				keys = append(keys, fmt.Sprintf("(%d,%d,%d)", o.W, o.D, o.O))
			}
			c.LostKeys = strings.Join(keys, " ")
		}
		dv := Judge(doubt, found)
		c.InDoubtPresent, c.Partial = dv.Present, c.Partial+dv.Partial
		c.Problems = append(c.Problems, dv.Problems...)
		ev := Judge(t.kept, found)
		c.Earlier, c.EarlierMissing = ev.Checked, ev.Lost+ev.Partial
		c.Problems = append(c.Problems, ev.Problems...)
		for _, o := range ev.LostKeys {
			c.Problems = append(c.Problems, fmt.Sprintf("order (%d,%d,%d) of cycle %d, present after an earlier restart, is gone",
				o.W, o.D, o.O, o.Cycle))
		}
		for _, o := range append(acked, doubt...) {
			if st, _ := Classify(o, found[[3]int{o.W, o.D, o.O}]); st == Present {
				t.kept = append(t.kept, o)
			}
		}
	}

	conds, bad, err := t.g.Check(t.ctx, 2, filepath.Join(t.logs, name+"-check.log"))
	switch {
	case err != nil:
		c.Check = "error"
		c.Problems = append(c.Problems, "go-tpc check: "+t.srv.Why(err).Error())
	case bad != "":
		c.Check = "FAILED"
		c.Problems = append(c.Problems, "go-tpc check: "+bad)
	case conds == 0:
		c.Check = "error"
		c.Problems = append(c.Problems, "go-tpc check ran no condition")
	default:
		c.Check = "passed"
	}
	if msg := checkIndexes(t.ctx, vdb); msg != "" {
		c.IndexErr = true
		c.Problems = append(c.Problems, msg)
	}
	if !t.srv.Alive() {
		return c, fmt.Errorf("the server died during the checks:\n%s", t.srv.LogTail(20))
	}
	return c, nil
}

func copyFile(from, to string) {
	if b, err := os.ReadFile(from); err == nil {
		_ = os.WriteFile(to, b, 0o644)
	}
}
