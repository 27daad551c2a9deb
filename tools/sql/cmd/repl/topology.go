// topology.go: the primary and the replica (their my.cnf lines, start and
// restart, the replication user and CHANGE MASTER), GTID positions and the
// wait for the replica to reach the primary.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tidesql/bench/internal/server"
)

type tester struct {
	o        options
	env      server.Env
	ctx      context.Context
	logs     string
	rnd      *rand.Rand
	primary  *server.Server
	replica  *server.Server
	acks     *AckLog
	steady   *Steady
	applies  []ApplyRate // the apply-rate phase (apply.go)
	cycles   []Cycle
	rcycles  []ReplicaCycle
	notes    []string
	problems []string
}

const (
	replUser = "repl"
	replPass = "repl-pw"
	ackDB    = "repl"
	sbDB     = "sbtest"
)

// replLines are the my.cnf lines of server id: binary log on (after the
// preset's skip-log-bin: the later line wins), ROW format, synced at every
// commit group, GTID strict mode; a replica also logs what it applies
// (it can be promoted) and keeps its GTID position in a TidesDB table
// (gtid_pos_auto_engines), so its position commits with its data.
func replLines(id, parallel int, mode, engine, iso string) []string {
	l := []string{
		"server_id = " + strconv.Itoa(id),
		"log_bin = binlog",
		"binlog_format = ROW",
		"sync_binlog = 1",
		"gtid_strict_mode = ON",
		"log_slave_updates = ON",
		"max_binlog_size = 16M",
	}
	if id != 1 {
		l = append(l, "relay_log = relay", "read_only = ON", "gtid_pos_auto_engines = "+engine, "skip_slave_start = ON",
			"slave_parallel_threads = "+strconv.Itoa(parallel), "slave_parallel_mode = "+mode)
		if iso != "" {
			l = append(l, "transaction_isolation = "+iso)
		}
	}
	return l
}

func (t *tester) startServer(name string, id, port int, fresh bool) (*server.Server, error) {
	p, _ := t.o.preset()
	p.Extra = replLines(id, t.o.parallel, t.o.parMode, t.o.engine, t.o.replIso)
	return server.Start(t.ctx, t.env, server.Options{Dir: filepath.Join(t.o.dir, name), Port: port, Preset: p,
		Engines: []string{"TidesDB"}, Fresh: fresh})
}

// exec runs statements on s.
func (t *tester) exec(s *server.Server, stmts ...string) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.ExecContext(t.ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstWords(q), s.Why(err))
		}
	}
	return nil
}

func firstWords(q string) string {
	if len(q) > 60 {
		return q[:60] + "..."
	}
	return q
}

// query1 reads one string value.
func (t *tester) query1(s *server.Server, q string, args ...any) (string, error) {
	db, err := s.Open("")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v sql.NullString
	if err := db.QueryRowContext(t.ctx, q, args...).Scan(&v); err != nil {
		return "", fmt.Errorf("%s: %w", firstWords(q), s.Why(err))
	}
	return v.String, nil
}

// setup starts both servers fresh, checks their settings, makes the
// schema on the primary and points the replica at it.
func (t *tester) setup() error {
	var err error
	fmt.Printf("repl: fresh primary in %s, replica in %s\n", filepath.Join(t.o.dir, "primary"), filepath.Join(t.o.dir, "replica"))
	if t.primary, err = t.startServer("primary", 1, t.o.port, true); err != nil {
		return fmt.Errorf("starting the primary: %w", err)
	}
	if t.replica, err = t.startServer("replica", 2, t.o.port+1, true); err != nil {
		return fmt.Errorf("starting the replica: %w", err)
	}
	for _, s := range []*server.Server{t.primary, t.replica} {
		if err := t.checkSettings(s); err != nil {
			return err
		}
	}
	if err := t.exec(t.primary,
		"CREATE USER '"+replUser+"'@'127.0.0.1' IDENTIFIED BY '"+replPass+"'",
		"GRANT REPLICATION SLAVE ON *.* TO '"+replUser+"'@'127.0.0.1'",
		"CREATE DATABASE "+ackDB, "CREATE DATABASE "+sbDB,
		ackSchema(ackDB, t.o.engine)); err != nil {
		return err
	}
	if err := t.checksumProbe(); err != nil {
		return err
	}
	// The replica starts from the primary's first binlog event (empty
	// slave position): it gets the user, the schema and the data.
	if err := t.exec(t.replica,
		"SET GLOBAL gtid_slave_pos = ''",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos",
			t.o.port, replUser, replPass),
		"START SLAVE"); err != nil {
		return err
	}
	if _, err := t.catchUp(t.replica); err != nil {
		return err
	}
	return nil
}

// checkSettings fails unless s runs with what the test is about.
func (t *tester) checkSettings(s *server.Server) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	var logBin, format, syncBin, strict, tsync, msync string
	err = db.QueryRowContext(t.ctx, "SELECT @@log_bin, @@binlog_format, @@sync_binlog, @@gtid_strict_mode, @@tidesdb_default_sync_mode, @@tidesdb_unified_memtable_sync_mode").
		Scan(&logBin, &format, &syncBin, &strict, &tsync, &msync)
	if err != nil {
		return s.Why(err)
	}
	got := fmt.Sprintf("log_bin=%s binlog_format=%s sync_binlog=%s gtid_strict_mode=%s tidesdb sync %s/%s", logBin, format, syncBin, strict, tsync, msync)
	if got != "log_bin=1 binlog_format=ROW sync_binlog=1 gtid_strict_mode=1 tidesdb sync FULL/FULL" {
		return fmt.Errorf("server on port %d runs with %s; want log_bin=1 binlog_format=ROW sync_binlog=1 gtid_strict_mode=1 tidesdb sync FULL/FULL", s.Port(), got)
	}
	return nil
}

// restartPrimary starts the primary again on its data directory (after a
// kill, mariadbd's binlog recovery runs before it answers).
func (t *tester) restartPrimary() error {
	s, err := t.startServer("primary", 1, t.o.port, false)
	if err != nil {
		return err
	}
	t.primary = s
	return nil
}

// seqNo is the sequence number of domain 0 in a GTID list ("0-1-42,1-2-7"),
// -1 when the domain is absent, an error when the list is malformed.
func seqNo(pos string) (int64, error) {
	if strings.TrimSpace(pos) == "" {
		return -1, nil
	}
	for _, g := range strings.Split(pos, ",") {
		f := strings.Split(strings.TrimSpace(g), "-")
		if len(f) != 3 {
			return 0, fmt.Errorf("malformed GTID %q in %q", g, pos)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed GTID %q in %q", g, pos)
		}
		if f[0] == "0" {
			return n, nil
		}
	}
	return -1, nil
}

// ReplicaStatus is what SHOW SLAVE STATUS says.
type ReplicaStatus struct {
	IO, SQL             string // Slave_IO_Running, Slave_SQL_Running
	IOError, SQLError   string
	Behind              sql.NullInt64 // Seconds_Behind_Master
	SlavePos, GtidIOPos string
}

func (t *tester) replicaStatus(s *server.Server) (ReplicaStatus, error) {
	var st ReplicaStatus
	db, err := s.Open("")
	if err != nil {
		return st, err
	}
	defer db.Close()
	rows, err := db.QueryContext(t.ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return st, s.Why(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return st, err
	}
	if !rows.Next() {
		return st, fmt.Errorf("SHOW SLAVE STATUS on port %d: no replication configured", s.Port())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return st, err
	}
	for i, c := range cols {
		v := vals[i].String
		switch c {
		case "Slave_IO_Running":
			st.IO = v
		case "Slave_SQL_Running":
			st.SQL = v
		case "Last_IO_Error":
			st.IOError = v
		case "Last_SQL_Error":
			st.SQLError = v
		case "Seconds_Behind_Master":
			if vals[i].Valid {
				n, _ := strconv.ParseInt(v, 10, 64)
				st.Behind = sql.NullInt64{Int64: n, Valid: true}
			}
		case "Gtid_Slave_Pos":
			st.SlavePos = v
		case "Gtid_IO_Pos":
			st.GtidIOPos = v
		}
	}
	return st, rows.Err()
}

// catchUp waits until replica r has applied the primary's whole binary log
// (its gtid_slave_pos equals the primary's gtid_binlog_pos; the load is
// stopped, the primary's position is read again whenever the replica
// reaches it) and returns how long that took. A
// stopped SQL thread (an apply error) fails at once; a stopped IO thread
// is waited for: it reconnects every second.
func (t *tester) catchUp(r *server.Server) (time.Duration, error) {
	target, err := t.query1(t.primary, "SELECT @@gtid_binlog_pos")
	if err != nil {
		return 0, err
	}
	want, err := seqNo(target)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	for {
		st, err := t.replicaStatus(r)
		if err != nil {
			return 0, err
		}
		if st.SQL != "Yes" {
			return 0, fmt.Errorf("replica on port %d: SQL thread not running: %s (IO: %s %s)", r.Port(), st.SQLError, st.IO, st.IOError)
		}
		pos, err := t.query1(r, "SELECT @@gtid_slave_pos")
		if err != nil {
			return 0, err
		}
		got, err := seqNo(pos)
		if err != nil {
			return 0, err
		}
		if got >= want {
			// A statement of a killed client may still commit on the
			// primary after the target was read: read it again, and
			// finish only when both are at the same GTID.
			now, err := t.query1(t.primary, "SELECT @@gtid_binlog_pos")
			if err != nil {
				return 0, err
			}
			if pos == now {
				return time.Since(t0), nil
			}
			nowSeq, err := seqNo(now)
			if err != nil {
				return 0, err
			}
			if got > nowSeq {
				return 0, fmt.Errorf("replica on port %d at GTID %s, beyond the primary's binlog at %s", r.Port(), pos, now)
			}
			if got == nowSeq {
				return 0, fmt.Errorf("replica on port %d at GTID %s, primary's binlog at %s", r.Port(), pos, now)
			}
			target, want = now, nowSeq
		}
		if time.Since(t0) > t.o.catchup {
			return 0, fmt.Errorf("replica on port %d did not reach the primary's %s within %s: at %s (IO thread %s: %s)",
				r.Port(), target, t.o.catchup, pos, st.IO, st.IOError)
		}
		if t.ctx.Err() != nil {
			return 0, t.ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
}
