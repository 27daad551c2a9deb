// Command repl tests MariaDB's binary-log replication over TidesDB tables
// (issue #21): a primary and a replica (two throw-away mariadbd from
// internal/server on 127.0.0.1, the durable preset: TidesDB sync FULL,
// sync_binlog=1, binlog_format=ROW, GTID replication with
// MASTER_USE_GTID=slave_pos), every table ENGINE=TidesDB on both.
//
//  1. steady: sysbench oltp_write_only and this process's logged writers
//     run on the primary for --steady; the replica's apply rate and lag are
//     sampled each second; then the replica catches up and every table
//     must agree (CHECKSUM TABLE, checked non-zero, and an ordered dump
//     hash).
//
//  2. crash: --cycles times, the same load is started and the primary is
//     killed with SIGKILL at a random moment, restarted (binlog crash
//     recovery resolves the engine's prepared transactions; the server
//     must start without --tc-heuristic-recover), and checked:
//     - every transaction acknowledged to a writer is in the primary;
//     - no transaction that failed before its COMMIT is there;
//     - engine and binlog agree: the logged ids in the primary's table are
//     exactly the ids in the committed event groups of its binary logs
//     (mariadb-binlog decodes them), so no transaction is in one and not
//     the other;
//     - the replica, which only sees the binlog, resumes by itself,
//     catches up to the primary's gtid_binlog_pos and every table
//     agrees with the primary's;
//     - the writers' invariants hold on both (each logged transaction
//     wrote one row in ack_a, one in ack_b and one counter increment).
//
//  3. replica crash: --replica-cycles times, the replica is killed with
//     SIGKILL while it applies the same load, restarted while the load
//     goes on (START SLAVE): its GTID position (kept in TidesDB with its
//     rows) must not go back, it must resume without an apply error and
//     end with the primary's tables.
//
//  4. snapshot: a replica built from a hot backup of the primary taken
//     under load (snapshot.go).
//
// It exits non-zero on any mismatch, a replica error, or a server that
// does not restart.
//
//	repl --cycles 3       # quick (scripts/mariadb/repl/repl_test.sh)
//	repl --cycles 10      # the acceptance run
package main

import (
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

type options struct {
	cycles     int
	rcycles    int // kill -9 cycles of the replica
	steady     time.Duration
	killMin    time.Duration
	killMax    time.Duration
	clients    int // logged writers
	sbThreads  int
	sbTables   int
	sbRows     int
	seed       int64
	cache      int64
	writeBuf   int64
	catchup    time.Duration
	dir        string
	port       int // primary; the replica listens on port+1
	out        string
	snapshot   bool // build a replica from a hot backup too
	parallel   int  // the replicas' slave_parallel_threads (0: one SQL thread)
	parMode    string
	sbTest     string   // sysbench script of the load
	minRetries int64    // the steady phase fails if the replica retried fewer transactions
	engine     string   // TidesDB, or InnoDB for a comparison (steady and apply-rate phases only)
	backlog    int      // apply-rate phase: transactions of each backlog (0: skip)
	applyModes []string // apply-rate phase: how the replica applies each backlog
	replIso    string   // the replicas' transaction_isolation ("": the server's default, REPEATABLE-READ)
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("repl", flag.ContinueOnError)
	fs.IntVar(&o.cycles, "cycles", 3, "kill -9 / restart cycles of the primary")
	fs.IntVar(&o.rcycles, "replica-cycles", 2, "kill -9 / restart cycles of the replica (after the primary's)")
	fs.DurationVar(&o.steady, "steady", 10*time.Second, "length of the steady (no crash) load that measures the replica's lag")
	fs.DurationVar(&o.killMin, "kill-min", 2*time.Second, "earliest kill, from the start of a cycle's load")
	fs.DurationVar(&o.killMax, "kill-max", 8*time.Second, "latest kill")
	fs.IntVar(&o.clients, "clients", 2, "logged writer connections")
	fs.IntVar(&o.sbThreads, "sb-threads", 2, "sysbench oltp_write_only threads")
	fs.IntVar(&o.sbTables, "sb-tables", 2, "sysbench tables")
	fs.IntVar(&o.sbRows, "sb-rows", 5000, "rows per sysbench table")
	fs.Int64Var(&o.seed, "seed", 0, "random seed (0: from the clock; printed)")
	cache := fs.String("cache", "64M", "TidesDB block cache of each server")
	wb := fs.String("write-buffer", "16M", "TidesDB unified memtable write buffer of each server")
	fs.DurationVar(&o.catchup, "catchup-timeout", 180*time.Second, "longest wait for the replica to reach the primary")
	fs.StringVar(&o.dir, "dir", "", "directory of the servers (default build/repl)")
	fs.IntVar(&o.port, "port", 3496, "TCP port of the primary; the replica uses port+1, the snapshot replica port+2")
	fs.StringVar(&o.out, "out", "", "results: cycles.csv, summary.md, logs/ (default build/repl/out)")
	fs.BoolVar(&o.snapshot, "snapshot", true, "also build a replica (port+2) from a hot backup of the primary taken under load, at the backup's GTID")
	fs.IntVar(&o.parallel, "replica-parallel", 4, "slave_parallel_threads of the replicas (0: the SQL thread applies alone)")
	fs.StringVar(&o.parMode, "replica-parallel-mode", "conservative", "slave_parallel_mode with --replica-parallel: conservative, minimal, optimistic or aggressive")
	fs.StringVar(&o.sbTest, "sb-test", "oltp_write_only", "sysbench script of the load: oltp_write_only, oltp_update_index, oltp_update_non_index or oltp_read_write")
	fs.Int64Var(&o.minRetries, "min-retries", 0, "fail the steady phase unless the replica retried at least this many transactions (Slave_retried_transactions): proof that apply conflicts happened and were resolved")
	fs.StringVar(&o.engine, "engine", "TidesDB", "engine of the test tables: TidesDB, or InnoDB to compare (needs --cycles 0 --replica-cycles 0 --snapshot=false)")
	fs.IntVar(&o.backlog, "apply-backlog", 0, "apply-rate phase: for each --apply-modes, stop the replica's SQL thread, log this many sysbench transactions on the primary, then time the replica applying them (0: no such phase)")
	fs.StringVar(&o.replIso, "replica-isolation", "", "transaction_isolation of the replicas (READ-COMMITTED, REPEATABLE-READ, ...; empty: the server's default)")
	modes := fs.String("apply-modes", "single,conservative,optimistic,aggressive", "apply-rate phase: single (one SQL thread) or a slave_parallel_mode with --replica-parallel workers, comma-separated")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.cache, err = server.ParseBytes(*cache); err != nil {
		return o, fmt.Errorf("--cache: %w", err)
	}
	if o.writeBuf, err = server.ParseBytes(*wb); err != nil {
		return o, fmt.Errorf("--write-buffer: %w", err)
	}
	switch {
	case o.cycles < 0 || o.rcycles < 0:
		return o, fmt.Errorf("--cycles %d, --replica-cycles %d: want 0 or more", o.cycles, o.rcycles)
	case o.steady < time.Second:
		return o, fmt.Errorf("--steady %s: want at least 1s", o.steady)
	case o.killMin < time.Second || o.killMax < o.killMin:
		return o, fmt.Errorf("--kill-min %s, --kill-max %s: want 1s <= kill-min <= kill-max", o.killMin, o.killMax)
	case o.clients < 1 || o.sbThreads < 1 || o.sbTables < 1 || o.sbRows < 1:
		return o, fmt.Errorf("--clients, --sb-threads, --sb-tables and --sb-rows want at least 1")
	case o.port < 1 || o.port > 65533:
		return o, fmt.Errorf("--port %d: want 1..65533 (the replicas take the next two)", o.port)
	case o.parallel < 0 || o.parallel > 64:
		return o, fmt.Errorf("--replica-parallel %d: want 0..64", o.parallel)
	case !validMode(o.parMode):
		return o, fmt.Errorf("--replica-parallel-mode %q: want conservative, minimal, optimistic or aggressive", o.parMode)
	case o.sbTest != "oltp_write_only" && o.sbTest != "oltp_update_index" && o.sbTest != "oltp_update_non_index" && o.sbTest != "oltp_read_write":
		return o, fmt.Errorf("--sb-test %q: want oltp_write_only, oltp_update_index, oltp_update_non_index or oltp_read_write", o.sbTest)
	case o.engine != "TidesDB" && o.engine != "InnoDB":
		return o, fmt.Errorf("--engine %q: want TidesDB or InnoDB", o.engine)
	case o.engine != "TidesDB" && (o.cycles > 0 || o.rcycles > 0 || o.snapshot):
		return o, fmt.Errorf("--engine %s: only the steady and apply-rate phases compare engines: add --cycles 0 --replica-cycles 0 --snapshot=false", o.engine)
	case o.replIso != "" && o.replIso != "READ-UNCOMMITTED" && o.replIso != "READ-COMMITTED" && o.replIso != "REPEATABLE-READ" && o.replIso != "SERIALIZABLE":
		return o, fmt.Errorf("--replica-isolation %q: want READ-UNCOMMITTED, READ-COMMITTED, REPEATABLE-READ or SERIALIZABLE", o.replIso)
	case o.minRetries < 0 || o.backlog < 0:
		return o, fmt.Errorf("--min-retries %d, --apply-backlog %d: want 0 or more", o.minRetries, o.backlog)
	case o.catchup < time.Second:
		return o, fmt.Errorf("--catchup-timeout %s: want at least 1s", o.catchup)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if m != "single" && !validMode(m) {
			return o, fmt.Errorf("--apply-modes: %q: want single, conservative, minimal, optimistic or aggressive", m)
		}
		if m != "single" && o.parallel == 0 {
			return o, fmt.Errorf("--apply-modes %s needs --replica-parallel > 0", m)
		}
		o.applyModes = append(o.applyModes, m)
	}
	if o.backlog > 0 && len(o.applyModes) == 0 {
		return o, fmt.Errorf("--apply-backlog %d with no --apply-modes", o.backlog)
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1000000007
	}
	_, err = o.preset()
	return o, err
}

func orDefault(iso string) string {
	if iso == "" {
		return "REPEATABLE-READ (default)"
	}
	return iso
}

// validMode: a slave_parallel_mode the test runs. optimistic and
// aggressive run transactions in parallel that may conflict on the
// replica: TidesDB reports its row-lock waits to the server
// (thd_rpl_deadlock_check), which rolls back and retries the later one.
func validMode(m string) bool {
	return m == "conservative" || m == "minimal" || m == "optimistic" || m == "aggressive"
}

// preset is the durable preset with this test's small caches (two servers
// share the machine).
func (o options) preset() (server.Preset, error) {
	p := server.DefaultPreset()
	p.Durability = server.Durable
	p.TidesDBCache, p.WriteBuffer = o.cache, o.writeBuf
	return p, p.Validate()
}

func (o options) lines() []string {
	p, _ := o.preset()
	return []string{
		fmt.Sprintf("replication over TidesDB: primary 127.0.0.1:%d, replica 127.0.0.1:%d; binlog ROW, sync_binlog=1, GTID (MASTER_USE_GTID=slave_pos, gtid_strict_mode)",
			o.port, o.port+1),
		fmt.Sprintf("preset %s: TidesDB sync %s, cache %s, write buffer %s per server",
			p.Name(), p.TidesDBSyncMode(), server.FormatBytes(p.TidesDBCache), server.FormatBytes(p.WriteBuffer)),
		fmt.Sprintf("replicas apply with slave_parallel_threads=%d (%s), transaction_isolation %s; test tables ENGINE=%s", o.parallel, o.parMode, orDefault(o.replIso), o.engine),
		fmt.Sprintf("load: sysbench %s %d threads on %d x %d rows + %d logged writers; steady %s; %d crash cycle(s) of the primary, %d of the replica, kill -9 at %s..%s; seed %d",
			o.sbTest, o.sbThreads, o.sbTables, o.sbRows, o.clients, o.steady, o.cycles, o.rcycles, o.killMin, o.killMax, o.seed),
	}
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "repl:", err)
		}
		os.Exit(1)
	}
}

func run(o options) error {
	// Connections break at every kill: their errors are counted, not
	// printed by the driver's logger.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	env, err := server.FindEnv()
	if err != nil {
		return err
	}
	if o.dir == "" {
		o.dir = filepath.Join(env.Root, "build", "repl")
	}
	if o.out == "" {
		o.out = filepath.Join(o.dir, "out")
	}
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	r, err := harness.Begin("repl", []string{"TidesDB"}, o.out, o.lines())
	if err != nil {
		return err
	}
	defer r.End()
	defer server.StopAll()
	t := &tester{o: o, env: r.Env, ctx: r.Ctx, logs: filepath.Join(o.out, "logs"), rnd: rand.New(rand.NewSource(o.seed)),
		acks: newAckLog()}
	if err := os.MkdirAll(t.logs, 0o755); err != nil {
		return err
	}
	start := time.Now()
	runErr := t.all()
	if err := t.write(time.Since(start)); err != nil {
		fmt.Fprintln(os.Stderr, "repl: writing results:", err)
	}
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	for _, p := range t.problems {
		errs = append(errs, errors.New(p))
	}
	if len(errs) == 0 {
		fmt.Printf("repl: passed: steady phase, %d crash cycle(s) of the primary and %d of the replica in %.0f s, 0 mismatches (results in %s)\n",
			len(t.cycles), len(t.rcycles), time.Since(start).Seconds(), o.out)
		_ = os.RemoveAll(filepath.Join(o.dir, "primary"))
		_ = os.RemoveAll(filepath.Join(o.dir, "replica"))
		_ = os.RemoveAll(filepath.Join(o.dir, "snapshot-replica"))
		_ = os.RemoveAll(filepath.Join(o.dir, "backup"))
	} else {
		fmt.Printf("repl: FAILED (results and server logs in %s; the server directories under %s are kept)\n", o.out, o.dir)
	}
	return errors.Join(errs...)
}

// all runs the setup, the steady phase, the crash cycles and the snapshot
// replica; t.problems collects what failed.
func (t *tester) all() error {
	if err := t.setup(); err != nil {
		return err
	}
	if err := t.steadyPhase(); err != nil {
		return err
	}
	if t.o.backlog > 0 {
		if err := t.applyRatePhase(); err != nil {
			return err
		}
	}
	if t.o.cycles > 0 {
		fmt.Println(cycleHeader())
	}
	for n := 1; n <= t.o.cycles; n++ {
		if t.ctx.Err() != nil {
			return fmt.Errorf("interrupted")
		}
		c, err := t.cycle(n)
		if c != nil {
			t.cycles = append(t.cycles, *c)
			fmt.Println(c.Line())
			for _, p := range c.Problems {
				fmt.Println("    " + p)
				t.problems = append(t.problems, fmt.Sprintf("cycle %d: %s", n, p))
			}
		}
		if err != nil {
			return err
		}
	}
	if t.o.rcycles > 0 {
		fmt.Println(replicaCycleHeader())
	}
	for n := 1; n <= t.o.rcycles; n++ {
		if t.ctx.Err() != nil {
			return fmt.Errorf("interrupted")
		}
		c, err := t.replicaCycle(n)
		if c != nil {
			t.rcycles = append(t.rcycles, *c)
			fmt.Println(c.Line())
			for _, p := range c.Problems {
				fmt.Println("    " + p)
				t.problems = append(t.problems, fmt.Sprintf("replica cycle %d: %s", n, p))
			}
		}
		if err != nil {
			return err
		}
	}
	if t.o.snapshot {
		if err := t.snapshotReplica(); err != nil {
			t.fail("snapshot replica: %s", err)
		}
	}
	return t.stopAll()
}

func (t *tester) stopAll() error {
	var errs []error
	for _, s := range []*server.Server{t.primary, t.replica} {
		if s != nil {
			if err := s.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// note prints a line and keeps it for summary.md.
func (t *tester) note(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	fmt.Println("repl: " + s)
	t.notes = append(t.notes, s)
}

func (t *tester) fail(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	fmt.Println("repl: FAIL: " + s)
	t.problems = append(t.problems, s)
}

// joinMax joins at most n items, saying how many more there were.
func joinMax(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, " ")
	}
	return strings.Join(items[:n], " ") + fmt.Sprintf(" (+%d more)", len(items)-n)
}
