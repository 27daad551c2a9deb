// phases.go: the steady phase (throughput and lag of the replica) and the
// crash cycles (kill -9 of the primary, restart, checks).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"tidesql/bench/internal/server"
)

// Steady is what the steady phase measured.
type Steady struct {
	PrepareRows     int64
	PrepareCatchup  float64 // s for the replica to apply sysbench prepare
	Seconds         float64 // length of the load
	SbTPS           float64 // sysbench's own transactions/s
	PrimaryTxns     int64   // GTIDs the primary logged during the load
	ReplicaTxns     int64   // GTIDs the replica applied during the load
	MaxLagTxns      int64   // largest primary - replica GTID gap sampled
	MaxBehind       int64   // largest Seconds_Behind_Master sampled
	Catchup         float64 // s from the end of the load to caught up
	Retries         int64   // transactions the replica rolled back and retried (apply conflicts)
	Tables          int
	Rows            int64
	Acked           int
	Mismatches      []string
	InvariantIssues []string
}

func (t *tester) seqOf(s *server.Server, v string) (int64, error) {
	pos, err := t.query1(s, "SELECT @@"+v)
	if err != nil {
		return 0, err
	}
	return seqNo(pos)
}

// steadyPhase loads sysbench's tables, runs the write load for --steady
// while sampling both servers' GTID positions each second, waits for the
// replica and compares every table.
func (t *tester) steadyPhase() error {
	st := &Steady{}
	t.steady = st
	t0 := time.Now()
	if err := t.sysbenchPrepare(); err != nil {
		return err
	}
	d, err := t.catchUp(t.replica)
	if err != nil {
		return err
	}
	st.PrepareRows = int64(t.o.sbTables * t.o.sbRows)
	st.PrepareCatchup = d.Seconds()
	t.note("sysbench prepare (%d rows) on the primary in %.1f s; the replica caught up %.1f s after it ended",
		st.PrepareRows, time.Since(t0).Seconds()-d.Seconds(), d.Seconds())

	p0, err := t.seqOf(t.primary, "gtid_binlog_pos")
	if err != nil {
		return err
	}
	r0, err := t.seqOf(t.replica, "gtid_slave_pos")
	if err != nil {
		return err
	}
	retry0, err := t.retried()
	if err != nil {
		return err
	}
	w, err := startWriters(t.primary, t.o.clients, 0, t.acks)
	if err != nil {
		return err
	}
	sb, err := t.startSysbench(t.o.steady, filepath.Join(t.logs, "steady-sysbench.log"))
	if err != nil {
		w.Stop()
		return err
	}
	start := time.Now()
	var pEnd, rEnd int64
	for !sb.Exited() && t.ctx.Err() == nil {
		time.Sleep(time.Second)
		p, err1 := t.seqOf(t.primary, "gtid_binlog_pos")
		r, err2 := t.seqOf(t.replica, "gtid_slave_pos")
		rs, err3 := t.replicaStatus(t.replica)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		pEnd, rEnd = p, r
		if p-r > st.MaxLagTxns {
			st.MaxLagTxns = p - r
		}
		if rs.Behind.Valid && rs.Behind.Int64 > st.MaxBehind {
			st.MaxBehind = rs.Behind.Int64
		}
	}
	if err := sb.Wait(t.ctx, t.o.steady+time.Minute); err != nil {
		w.Stop()
		return err
	}
	st.Seconds = time.Since(start).Seconds()
	nerr, first := w.Stop()
	out, _ := os.ReadFile(sb.log)
	if _, tps, ok := sbTransactions(string(out)); ok {
		st.SbTPS = tps
	} else {
		return fmt.Errorf("sysbench printed no result (log %s)", sb.log)
	}
	if pEnd == 0 {
		return fmt.Errorf("no GTID position sampled during the steady load")
	}
	st.PrimaryTxns, st.ReplicaTxns = pEnd-p0, rEnd-r0
	if d, err = t.catchUp(t.replica); err != nil {
		return err
	}
	st.Catchup = d.Seconds()
	retry1, err := t.retried()
	if err != nil {
		return err
	}
	st.Retries = retry1 - retry0
	st.Acked = t.acks.Count(Acked)
	if st.Acked == 0 {
		return fmt.Errorf("the logged writers committed nothing in the steady phase (%d errors, first: %s)", nerr, first)
	}
	pIDs, bad, err := t.ackIDs(t.primary)
	if err != nil {
		return err
	}
	st.InvariantIssues = append(st.InvariantIssues, bad...)
	_, bad, err = t.ackIDs(t.replica)
	if err != nil {
		return err
	}
	st.InvariantIssues = append(st.InvariantIssues, bad...)
	for _, lost := range t.acks.missing(pIDs) {
		st.InvariantIssues = append(st.InvariantIssues, "acknowledged id missing on the primary: "+lost)
	}
	cmp, err := t.compareServers(t.primary, t.replica)
	if err != nil {
		return err
	}
	st.Tables, st.Rows, st.Mismatches = cmp.Tables, cmp.Rows, cmp.Mismatches
	t.note("steady: %.0f s of load: sysbench %.0f tps + logged writers (%d acknowledged); primary logged %d GTIDs (%.0f/s), replica applied %d in that time (%.0f/s); largest gap %d transactions, Seconds_Behind_Master up to %d; caught up %.2f s after the load ended",
		st.Seconds, st.SbTPS, st.Acked, st.PrimaryTxns, float64(st.PrimaryTxns)/st.Seconds, st.ReplicaTxns,
		float64(st.ReplicaTxns)/st.Seconds, st.MaxLagTxns, st.MaxBehind, st.Catchup)
	if e, err := t.query1(t.replica, "SELECT GROUP_CONCAT(CONCAT(TABLE_NAME, ' (', ENGINE, ')') ORDER BY TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql' AND TABLE_NAME LIKE 'gtid_slave_pos%'"); err == nil {
		t.note("replica's GTID position tables (gtid_pos_auto_engines=%s): %s", t.o.engine, e)
	}
	t.note("steady: the replica (slave_parallel_threads=%d, %s) retried %d transactions (Slave_retried_transactions: apply conflicts it rolled back and ran again)",
		t.o.parallel, t.o.parMode, st.Retries)
	if st.Retries < t.o.minRetries {
		t.fail("steady: the replica retried %d transactions, fewer than --min-retries %d: no apply conflict was exercised", st.Retries, t.o.minRetries)
	}
	t.note("steady: %d tables, %d rows compared (count, CHECKSUM TABLE, ordered SHA-256): %d mismatches", st.Tables, st.Rows, len(st.Mismatches))
	for _, m := range append(st.Mismatches, st.InvariantIssues...) {
		t.fail("steady: %s", m)
	}
	return nil
}

// missing lists the acknowledged ids not in present, sorted.
func (l *AckLog) missing(present map[int64]bool) []string {
	l.mu.Lock()
	acked := map[int64]bool{}
	for id, o := range l.m {
		if o == Acked {
			acked[id] = true
		}
	}
	l.mu.Unlock()
	return diff(acked, present)
}

// cycleCounts are the outcomes of cycle's transactions, and how many of
// its in-doubt ones and failed ones are present.
func (l *AckLog) cycleCounts(cycle int, present map[int64]bool) (acked, doubt, doubtPresent, failed int, phantoms []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, o := range l.m {
		if int(id/1_000_000_000) != cycle {
			continue
		}
		switch o {
		case Acked:
			acked++
		case InDoubt:
			doubt++
			if present[id] {
				doubtPresent++
			}
		case Failed:
			failed++
			if present[id] {
				phantoms = append(phantoms, strconv.FormatInt(id, 10))
			}
		}
	}
	return
}

// Cycle is one kill, restart and check.
type Cycle struct {
	N              int
	KillAt         float64 // s into the load
	Acked          int     // this cycle's COMMITs that returned OK
	InDoubt        int     // COMMIT sent, no answer
	InDoubtPresent int
	Failed         int // error before COMMIT
	Lost           int // acknowledged (any cycle) and absent from the primary
	Phantoms       int // failed before COMMIT and present
	Prepared       int // prepared transactions TidesDB listed at recovery
	BinlogOnly     int // logged ids in the binlog and not the engine
	EngineOnly     int // in the engine and not the binlog
	Recovery       float64
	Catchup        float64 // s from the primary's restart to the replica caught up
	Tables         int
	Rows           int64
	Mismatches     int
	Problems       []string
}

func cycleHeader() string {
	return "cycle  kill_s  acked  in_doubt(present)  failed  lost  phantom  prepared_at_recovery  binlog_only  engine_only  recovery_s  catchup_s  tables  rows  mismatches"
}

// Line is the cycle's row under cycleHeader.
func (c Cycle) Line() string {
	return fmt.Sprintf("%5d  %6.1f  %5d  %8d(%d)  %6d  %4d  %7d  %20d  %11d  %11d  %10.2f  %9.2f  %6d  %d  %d",
		c.N, c.KillAt, c.Acked, c.InDoubt, c.InDoubtPresent, c.Failed, c.Lost, c.Phantoms, c.Prepared,
		c.BinlogOnly, c.EngineOnly, c.Recovery, c.Catchup, c.Tables, c.Rows, c.Mismatches)
}

var rePrepared = regexp.MustCompile(`Found (\d+) prepared transaction\(s\) in TidesDB`)

// cycle runs the load, kills the primary, restarts it and checks. A nil
// Cycle with an error: the cycle could not run; a Cycle with an error:
// stop here.
func (t *tester) cycle(n int) (*Cycle, error) {
	c := &Cycle{N: n}
	name := fmt.Sprintf("cycle-%02d", n)
	killAt := t.o.killMin + time.Duration(t.rnd.Int63n(int64(t.o.killMax-t.o.killMin)+1))
	w, err := startWriters(t.primary, t.o.clients, n, t.acks)
	if err != nil {
		return nil, err
	}
	sb, err := t.startSysbench(killAt+10*time.Minute, filepath.Join(t.logs, name+"-sysbench.log"))
	if err != nil {
		w.Stop()
		return nil, err
	}
	t0 := time.Now()
	select {
	case <-time.After(killAt):
	case <-t.ctx.Done():
	}
	c.KillAt = time.Since(t0).Seconds()
	sbExited := sb.Exited()
	t.primary.Kill()
	_, first := w.Stop()
	sb.Stop()
	if sbExited {
		c.Problems = append(c.Problems, "sysbench ended before the kill (see "+name+"-sysbench.log)")
	}

	r0 := time.Now()
	if err := t.restartPrimary(); err != nil {
		c.Problems = append(c.Problems, "the primary did not restart: "+err.Error())
		return c, fmt.Errorf("the primary did not restart after the kill: %w", err)
	}
	c.Recovery = time.Since(r0).Seconds()
	// The replica resumes by itself (it reconnects every second): timed
	// from the primary's restart, while the primary is checked.
	type caught struct {
		d   time.Duration
		err error
	}
	cu := make(chan caught, 1)
	go func() { d, err := t.catchUp(t.replica); cu <- caught{d, err} }()
	logText, _ := os.ReadFile(t.primary.Log)
	_ = os.WriteFile(filepath.Join(t.logs, name+"-primary-error.log"), logText, 0o644)
	for _, m := range rePrepared.FindAllStringSubmatch(string(logText), -1) {
		k, _ := strconv.Atoi(m[1])
		c.Prepared += k
	}

	// The primary: acknowledged commits present, failed ones absent, the
	// writers' invariants, and the same logged ids in engine and binlog.
	pIDs, bad, err := t.ackIDs(t.primary)
	if err != nil {
		return c, err
	}
	c.Problems = append(c.Problems, bad...)
	var phantoms []string
	c.Acked, c.InDoubt, c.InDoubtPresent, c.Failed, phantoms = t.acks.cycleCounts(n, pIDs)
	if c.Acked == 0 {
		c.Problems = append(c.Problems, "no logged transaction was acknowledged before the kill (first error: "+first+")")
	}
	if lost := t.acks.missing(pIDs); len(lost) > 0 {
		c.Lost = len(lost)
		c.Problems = append(c.Problems, fmt.Sprintf("%d acknowledged transactions missing on the primary: %s", len(lost), joinMax(lost, 8)))
	}
	if len(phantoms) > 0 {
		c.Phantoms = len(phantoms)
		c.Problems = append(c.Problems, fmt.Sprintf("%d transactions that failed before COMMIT are present: %s", len(phantoms), joinMax(phantoms, 8)))
	}
	bIDs, _, err := t.binlogAckIDs()
	if err != nil {
		return c, err
	}
	if d := diff(bIDs, pIDs); len(d) > 0 {
		c.BinlogOnly = len(d)
		c.Problems = append(c.Problems, fmt.Sprintf("%d transactions in the binlog but not in the engine: %s", len(d), joinMax(d, 8)))
	}
	if d := diff(pIDs, bIDs); len(d) > 0 {
		c.EngineOnly = len(d)
		c.Problems = append(c.Problems, fmt.Sprintf("%d transactions in the engine but not in the binlog: %s", len(d), joinMax(d, 8)))
	}

	// The replica must end with exactly the primary's tables.
	r := <-cu
	if r.err != nil {
		c.Problems = append(c.Problems, "replica: "+r.err.Error())
		return c, r.err
	}
	c.Catchup = r.d.Seconds()
	_, bad, err = t.ackIDs(t.replica)
	if err != nil {
		return c, err
	}
	c.Problems = append(c.Problems, bad...)
	cmp, err := t.compareServers(t.primary, t.replica)
	if err != nil {
		return c, err
	}
	c.Tables, c.Rows, c.Mismatches = cmp.Tables, cmp.Rows, len(cmp.Mismatches)
	c.Problems = append(c.Problems, cmp.Mismatches...)
	return c, nil
}
