// replica_crash.go: kill -9 of the replica while it applies. The replica
// keeps its GTID position in a TidesDB table (gtid_pos_auto_engines), in
// the transaction of the rows it applies, so after its restart it must
// neither re-apply a transaction it holds (a duplicate key would stop it)
// nor skip one (its tables would differ from the primary's), and its
// position must not go back past what it had committed before the kill.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ReplicaCycle is one kill, restart and check of the replica.
type ReplicaCycle struct {
	N          int
	KillAt     float64
	PosBefore  int64 // replica's gtid_slave_pos read just before the kill
	PosAfter   int64 // at its restart, before START SLAVE
	Prepared   int   // prepared transactions TidesDB listed at its recovery
	Recovery   float64
	Catchup    float64 // s from START SLAVE to the primary's position
	Tables     int
	Rows       int64
	Mismatches int
	Problems   []string
}

func replicaCycleHeader() string {
	return "replica_cycle  kill_s  pos_before_kill  pos_after_restart  prepared_at_recovery  recovery_s  catchup_s  tables  rows  mismatches"
}

// Line is the cycle's row under replicaCycleHeader.
func (c ReplicaCycle) Line() string {
	return fmt.Sprintf("%13d  %6.1f  %15d  %17d  %20d  %10.2f  %9.2f  %6d  %d  %d",
		c.N, c.KillAt, c.PosBefore, c.PosAfter, c.Prepared, c.Recovery, c.Catchup, c.Tables, c.Rows, c.Mismatches)
}

// replicaCycle runs the load on the primary, kills the replica at a
// random moment, restarts it while the load goes on, then stops the load
// and checks. A nil cycle with an error: it could not run.
func (t *tester) replicaCycle(n int) (*ReplicaCycle, error) {
	c := &ReplicaCycle{N: n}
	name := fmt.Sprintf("replica-cycle-%02d", n)
	killAt := t.o.killMin + time.Duration(t.rnd.Int63n(int64(t.o.killMax-t.o.killMin)+1))
	w, err := startWriters(t.primary, t.o.clients, 500+n, t.acks)
	if err != nil {
		return nil, err
	}
	sb, err := t.startSysbench(killAt+10*time.Minute, filepath.Join(t.logs, name+"-sysbench.log"))
	if err != nil {
		w.Stop()
		return nil, err
	}
	stopLoad := func() {
		w.Stop()
		sb.Stop()
	}
	t0 := time.Now()
	select {
	case <-time.After(killAt):
	case <-t.ctx.Done():
	}
	if c.PosBefore, err = t.seqOf(t.replica, "gtid_slave_pos"); err != nil {
		stopLoad()
		return nil, err
	}
	c.KillAt = time.Since(t0).Seconds()
	t.replica.Kill()

	r0 := time.Now()
	s, err := t.startServer("replica", 2, t.o.port+1, false)
	if err != nil {
		stopLoad()
		c.Problems = append(c.Problems, "the replica did not restart: "+err.Error())
		return c, fmt.Errorf("the replica did not restart after the kill: %w", err)
	}
	t.replica = s
	c.Recovery = time.Since(r0).Seconds()
	logText, _ := os.ReadFile(s.Log)
	_ = os.WriteFile(filepath.Join(t.logs, name+"-replica-error.log"), logText, 0o644)
	for _, m := range rePrepared.FindAllStringSubmatch(string(logText), -1) {
		k, _ := strconv.Atoi(m[1])
		c.Prepared += k
	}
	if c.PosAfter, err = t.seqOf(s, "gtid_slave_pos"); err != nil {
		stopLoad()
		return c, err
	}
	if c.PosAfter < c.PosBefore {
		c.Problems = append(c.Problems, fmt.Sprintf("the replica's position went back from %d (committed before the kill) to %d", c.PosBefore, c.PosAfter))
	}
	// The primary's load still runs: the replica restarts behind it.
	s0 := time.Now()
	if err := t.exec(s, "START SLAVE"); err != nil {
		stopLoad()
		return c, err
	}
	time.Sleep(time.Second)
	stopLoad()
	if _, err := t.catchUp(s); err != nil {
		c.Problems = append(c.Problems, "replica: "+err.Error())
		return c, err
	}
	c.Catchup = time.Since(s0).Seconds()
	pIDs, bad, err := t.ackIDs(t.primary)
	if err != nil {
		return c, err
	}
	c.Problems = append(c.Problems, bad...)
	if lost := t.acks.missing(pIDs); len(lost) > 0 {
		c.Problems = append(c.Problems, fmt.Sprintf("%d acknowledged transactions missing on the primary: %s", len(lost), joinMax(lost, 8)))
	}
	if _, bad, err = t.ackIDs(s); err != nil {
		return c, err
	}
	c.Problems = append(c.Problems, bad...)
	cmp, err := t.compareServers(t.primary, s)
	if err != nil {
		return c, err
	}
	c.Tables, c.Rows, c.Mismatches = cmp.Tables, cmp.Rows, len(cmp.Mismatches)
	c.Problems = append(c.Problems, cmp.Mismatches...)
	return c, nil
}

// replicaCyclesCSV is replica_cycles.csv.
func replicaCyclesCSV(cs []ReplicaCycle) string {
	var b strings.Builder
	b.WriteString("replica_cycle,kill_s,pos_before_kill,pos_after_restart,prepared_at_recovery,recovery_s,catchup_s,tables,rows,mismatches\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "%d,%.1f,%d,%d,%d,%.2f,%.2f,%d,%d,%d\n", c.N, c.KillAt, c.PosBefore, c.PosAfter, c.Prepared,
			c.Recovery, c.Catchup, c.Tables, c.Rows, c.Mismatches)
	}
	return b.String()
}
