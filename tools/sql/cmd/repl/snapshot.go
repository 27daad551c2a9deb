// snapshot.go: a replica built from a hot backup of the primary (the
// engine's checkpoint, SET GLOBAL tidesdb_backup_dir, docs/design/backup.md)
// taken while the load runs, started at the GTID the backup recorded.
// If the backup and its GTID did not describe the same instant, the
// replica would re-apply a transaction it already holds (a duplicate key
// stops it) or miss one (its tables differ from the primary's).
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// readBackupPos reads the key=value lines of a backup's tidesdb_binlog_pos.
func readBackupPos(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the backup has no position file: %w", err)
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not key=value", path, line)
		}
		kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if kv["gtid_binlog_pos"] == "" {
		return nil, fmt.Errorf("%s records no gtid_binlog_pos", path)
	}
	return kv, nil
}

func copyTree(from, to string) error {
	if out, err := exec.Command("cp", "-rp", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -rp %s %s: %v: %s", from, to, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// snapshotReplica takes a backup of the primary under load, restores it
// into a fresh third server, starts replication there at the backup's
// GTID and compares every table with the primary once it caught up.
func (t *tester) snapshotReplica() error {
	bk := filepath.Join(t.o.dir, "backup")
	if err := os.RemoveAll(bk); err != nil {
		return err
	}
	w, err := startWriters(t.primary, t.o.clients, t.o.cycles+1, t.acks)
	if err != nil {
		return err
	}
	sb, err := t.startSysbench(10*time.Minute, filepath.Join(t.logs, "snapshot-sysbench.log"))
	if err != nil {
		w.Stop()
		return err
	}
	time.Sleep(2 * time.Second)
	b0 := time.Now()
	berr := t.exec(t.primary, "SET GLOBAL tidesdb_backup_dir = '"+bk+"'")
	took := time.Since(b0)
	time.Sleep(2 * time.Second)
	sbDied := sb.Exited()
	sb.Stop()
	w.Stop()
	if berr != nil {
		return fmt.Errorf("the backup: %w", berr)
	}
	if sbDied {
		return fmt.Errorf("sysbench ended during the backup (log %s)", sb.log)
	}
	pos, err := readBackupPos(filepath.Join(bk, "tidesdb_binlog_pos"))
	if err != nil {
		return err
	}
	gtid := pos["gtid_binlog_pos"]
	after, err := t.seqOf(t.primary, "gtid_binlog_pos")
	if err != nil {
		return err
	}
	at, err := seqNo(gtid)
	if err != nil {
		return err
	}

	// A fresh data directory (system tables), then the backup's engine
	// files and the TidesDB tables' .frm files in place of the fresh ones.
	s, err := t.startServer("snapshot-replica", 3, t.o.port+2, true)
	if err != nil {
		return fmt.Errorf("initialising the snapshot replica: %w", err)
	}
	data := s.DataDir()
	if err := s.Stop(); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(data, "#tidesdb")); err != nil {
		return err
	}
	if err := copyTree(filepath.Join(bk, "#tidesdb"), filepath.Join(data, "#tidesdb")); err != nil {
		return err
	}
	for _, db := range []string{ackDB, sbDB} {
		if err := copyTree(filepath.Join(bk, db), filepath.Join(data, db)); err != nil {
			return err
		}
	}
	if s, err = t.startServer("snapshot-replica", 3, t.o.port+2, false); err != nil {
		return fmt.Errorf("starting the snapshot replica on the restored files: %w", err)
	}
	defer s.Stop()
	rows, err := t.query1(s, "SELECT COUNT(*) FROM "+ackDB+".ack_a")
	if err != nil {
		return fmt.Errorf("reading the restored tables: %w", err)
	}
	if err := t.exec(s,
		"SET GLOBAL gtid_slave_pos = '"+gtid+"'",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos",
			t.o.port, replUser, replPass),
		"START SLAVE"); err != nil {
		return err
	}
	d, err := t.catchUp(s)
	if err != nil {
		return err
	}
	_, bad, err := t.ackIDs(s)
	if err != nil {
		return err
	}
	cmp, err := t.compareServers(t.primary, s)
	if err != nil {
		return err
	}
	t.note("snapshot replica: SET GLOBAL tidesdb_backup_dir took %.2f s under load; backup at GTID %s (binlog %s:%s) with %s rows in ack_a; the primary logged %d more transactions after it; the restored server replicated them from that GTID and caught up in %.2f s; %d tables, %d rows compared: %d mismatches",
		took.Seconds(), gtid, pos["binlog_file"], pos["binlog_pos"], rows, after-at, d.Seconds(), cmp.Tables, cmp.Rows, len(cmp.Mismatches))
	if after-at <= 0 {
		bad = append(bad, "no transaction was logged after the backup point: the test did not replicate anything past the snapshot")
	}
	for _, m := range append(cmp.Mismatches, bad...) {
		t.fail("snapshot replica: %s", m)
	}
	return nil
}
