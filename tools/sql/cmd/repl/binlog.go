// binlog.go: which logged transactions does the primary's binary log hold?
// mariadb-binlog decodes the row events (-v --base64-output=DECODE-ROWS);
// an id counts when its ack_a INSERT is inside an event group that ends in
// COMMIT (the Xid event): a group cut short by the kill, or rolled back,
// is not a transaction of the binlog (recovery and replicas ignore it).
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// committedIDs reads mariadb-binlog's decoded output and returns the first
// column (@1) of every row inserted into table (as "`db`.`t`") by a
// committed event group.
func committedIDs(r io.Reader, table string) (map[int64]bool, error) {
	ids := map[int64]bool{}
	var pending []int64
	want := "### INSERT INTO " + table
	expect := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == want:
			expect = true
		case expect && strings.HasPrefix(line, "###   @1="):
			v := strings.TrimPrefix(line, "###   @1=")
			if i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 && !(i == 0 && v[0] == '-') {
				v = v[:i]
			}
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("binlog row %q: %w", line, err)
			}
			pending = append(pending, id)
			expect = false
		case strings.HasPrefix(line, "BEGIN") || strings.HasPrefix(line, "START TRANSACTION") ||
			strings.HasPrefix(line, "ROLLBACK") || (strings.HasPrefix(line, "#") && strings.Contains(line, " GTID ")):
			pending = pending[:0]
			expect = false
		case strings.HasPrefix(line, "COMMIT"):
			for _, id := range pending {
				ids[id] = true
			}
			pending = pending[:0]
			expect = false
		}
	}
	return ids, sc.Err()
}

// binlogAckIDs decodes every binary log of the primary (SHOW BINARY LOGS)
// and returns the ids of committed ack_a inserts.
func (t *tester) binlogAckIDs() (map[int64]bool, int, error) {
	db, err := t.primary.Open("")
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	rows, err := db.QueryContext(t.ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, 0, t.primary.Why(err)
	}
	var files []string
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new([]byte)
		}
		if err := rows.Scan(vals...); err != nil {
			rows.Close()
			return nil, 0, err
		}
		files = append(files, filepath.Join(t.primary.DataDir(), string(*vals[0].(*[]byte))))
	}
	rows.Close()
	if len(files) == 0 {
		return nil, 0, fmt.Errorf("SHOW BINARY LOGS on the primary lists no file")
	}
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Minute)
	defer cancel()
	args := append([]string{"--no-defaults", "-v", "--base64-output=DECODE-ROWS"}, files...)
	cmd := exec.CommandContext(ctx, "mariadb-binlog", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("mariadb-binlog: %w", err)
	}
	ids, perr := committedIDs(out, "`"+ackDB+"`.`ack_a`")
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if perr != nil {
		return nil, 0, perr
	}
	if werr != nil {
		return nil, 0, fmt.Errorf("mariadb-binlog %s: %v: %s", strings.Join(files, " "), werr, strings.TrimSpace(stderr.String()))
	}
	return ids, len(files), nil
}
