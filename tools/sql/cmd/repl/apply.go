// apply.go: the apply-rate phase. For each --apply-modes entry the
// replica's threads are stopped and set to that mode, its IO thread fetches
// a backlog of --apply-backlog sysbench transactions logged by the primary
// meanwhile, then its SQL thread (or workers) start and the time to apply
// the whole backlog is measured: transactions per second of apply alone,
// with nothing else running.
package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"tidesql/bench/internal/harness"
)

// ApplyRate is one backlog applied in one mode.
type ApplyRate struct {
	Mode    string // single, or a slave_parallel_mode
	Threads int
	Txns    int64   // GTIDs in the backlog
	Seconds float64 // from START SLAVE SQL_THREAD to caught up
	Retries int64   // Slave_retried_transactions during the apply
}

func (a ApplyRate) Rate() float64 {
	if a.Seconds <= 0 {
		return 0
	}
	return float64(a.Txns) / a.Seconds
}

// retried reads the replica's Slave_retried_transactions.
func (t *tester) retried() (int64, error) {
	db, err := t.replica.Open("")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var name string
	var n int64
	err = db.QueryRowContext(t.ctx, "SHOW GLOBAL STATUS LIKE 'Slave_retried_transactions'").Scan(&name, &n)
	return n, t.replica.Why(err)
}

func (t *tester) applyRatePhase() error {
	for _, m := range t.o.applyModes {
		threads, mode := t.o.parallel, m
		if m == "single" {
			threads, mode = 0, "conservative"
		}
		if err := t.exec(t.replica, "STOP SLAVE",
			"SET GLOBAL slave_parallel_threads = "+strconv.Itoa(threads),
			"SET GLOBAL slave_parallel_mode = '"+mode+"'",
			"START SLAVE IO_THREAD"); err != nil {
			return err
		}
		p0, err := t.seqOf(t.primary, "gtid_binlog_pos")
		if err != nil {
			return err
		}
		log := filepath.Join(t.logs, "apply-"+m+"-sysbench.log")
		_, err = harness.Exec(t.ctx, 10*time.Minute, log, "sysbench",
			append(sbArgs(t.primary, t.o), "--threads="+strconv.Itoa(t.o.sbThreads),
				"--events="+strconv.Itoa(t.o.backlog), "--time=0", "--report-interval=0", "run")...)
		if err != nil {
			return fmt.Errorf("apply-rate backlog (%s): %w", log, t.primary.Why(err))
		}
		p1, err := t.seqOf(t.primary, "gtid_binlog_pos")
		if err != nil {
			return err
		}
		// Wait for the IO thread to have the whole backlog in the relay log.
		for deadline := time.Now().Add(t.o.catchup); ; {
			st, err := t.replicaStatus(t.replica)
			if err != nil {
				return err
			}
			if n, err := seqNo(st.GtidIOPos); err == nil && n >= p1 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("apply-rate: the replica's IO thread did not fetch the backlog within %s (at %s, IO %s %s)",
					t.o.catchup, st.GtidIOPos, st.IO, st.IOError)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r0, err := t.retried()
		if err != nil {
			return err
		}
		if err := t.exec(t.replica, "START SLAVE SQL_THREAD"); err != nil {
			return err
		}
		d, err := t.catchUp(t.replica)
		if err != nil {
			return fmt.Errorf("apply-rate (%s): %w", m, err)
		}
		r1, err := t.retried()
		if err != nil {
			return err
		}
		a := ApplyRate{Mode: m, Threads: threads, Txns: p1 - p0, Seconds: d.Seconds(), Retries: r1 - r0}
		t.applies = append(t.applies, a)
		t.note("apply rate, %s (slave_parallel_threads=%d): a backlog of %d transactions applied in %.2f s = %.0f transactions/s, %d retried",
			m, threads, a.Txns, a.Seconds, a.Rate(), a.Retries)
	}
	// Back to the configured mode; every table must still agree.
	if err := t.exec(t.replica, "STOP SLAVE",
		"SET GLOBAL slave_parallel_threads = "+strconv.Itoa(t.o.parallel),
		"SET GLOBAL slave_parallel_mode = '"+t.o.parMode+"'", "START SLAVE"); err != nil {
		return err
	}
	cmp, err := t.compareServers(t.primary, t.replica)
	if err != nil {
		return err
	}
	for _, mm := range cmp.Mismatches {
		t.fail("after the apply-rate phase: %s", mm)
	}
	t.note("after the apply-rate phase: %d tables, %d rows compared, %d mismatches", cmp.Tables, cmp.Rows, len(cmp.Mismatches))
	return nil
}
