// load.go: the write load on the primary: sysbench oltp_write_only, and
// this process's logged writers, whose transactions each carry a unique id
// and are logged by their outcome as seen by the client:
//   - Acked: COMMIT returned OK: must be in the primary after any crash;
//   - InDoubt: COMMIT sent, no answer (the kill): may be either way;
//   - Failed: an error before COMMIT was sent: must not be there.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/server"
)

// ackSchema: every logged transaction inserts one row in ack_a and one in
// ack_b (same id) and adds one to counters row id % 16, so on any server
// ack_a and ack_b hold the same ids and SUM(counters.n) = COUNT(ack_a).
func ackSchema(db, engine string) string {
	s := "CREATE TABLE " + db + ".ack_a (id BIGINT PRIMARY KEY, client INT NOT NULL, cycle INT NOT NULL, v INT NOT NULL, KEY (v)) ENGINE=" + engine + ";" +
		"CREATE TABLE " + db + ".ack_b (id BIGINT PRIMARY KEY, u BIGINT NOT NULL, pad VARCHAR(200) NOT NULL, UNIQUE KEY (u)) ENGINE=" + engine + ";" +
		"CREATE TABLE " + db + ".counters (k INT PRIMARY KEY, n BIGINT NOT NULL, last BIGINT NOT NULL) ENGINE=" + engine + ";" +
		"INSERT INTO " + db + ".counters VALUES "
	for k := 0; k < 16; k++ {
		if k > 0 {
			s += ","
		}
		s += fmt.Sprintf("(%d,0,0)", k)
	}
	return s
}

// Outcome of one logged transaction, as the client saw it.
type Outcome int

const (
	Acked Outcome = iota
	InDoubt
	Failed
)

// AckLog holds the outcome of every logged transaction by id.
type AckLog struct {
	mu sync.Mutex
	m  map[int64]Outcome
}

func newAckLog() *AckLog { return &AckLog{m: map[int64]Outcome{}} }

func (l *AckLog) add(id int64, o Outcome) {
	l.mu.Lock()
	l.m[id] = o
	l.mu.Unlock()
}

// Count is how many transactions had outcome o.
func (l *AckLog) Count(o Outcome) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.m {
		if x == o {
			n++
		}
	}
	return n
}

// txnID is the id of writer client's seq-th transaction of cycle.
func txnID(cycle, client int, seq int64) int64 {
	return int64(cycle)*1_000_000_000 + int64(client)*10_000_000 + seq
}

// Writers run the logged transactions until Stop.
type Writers struct {
	db      *sql.DB
	stop    atomic.Bool
	wg      sync.WaitGroup
	errs    atomic.Int64
	firstMu sync.Mutex
	first   string
}

func startWriters(s *server.Server, clients, cycle int, log *AckLog) (*Writers, error) {
	// Short timeouts: a writer blocked on the dead server must give up.
	db, err := sql.Open("mysql", s.DSN("")+"&timeout=5s&readTimeout=30s&writeTimeout=30s")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(clients)
	w := &Writers{db: db}
	for c := 0; c < clients; c++ {
		w.wg.Add(1)
		go func(c int) {
			defer w.wg.Done()
			for seq := int64(1); !w.stop.Load() && seq < 10_000_000; seq++ {
				id := txnID(cycle, c, seq)
				o, err := oneTxn(db, id, c, cycle)
				log.add(id, o)
				if err != nil {
					w.errs.Add(1)
					w.firstMu.Lock()
					if w.first == "" {
						w.first = err.Error()
					}
					w.firstMu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
			}
		}(c)
	}
	return w, nil
}

// Stop ends the writers and returns their error count and first error.
func (w *Writers) Stop() (int64, string) {
	w.stop.Store(true)
	w.wg.Wait()
	w.db.Close()
	return w.errs.Load(), w.first
}

func oneTxn(db *sql.DB, id int64, client, cycle int) (Outcome, error) {
	// Not tied to a context: a cancelled context would make database/sql
	// roll back, or report a failure for a COMMIT that went through.
	tx, err := db.Begin()
	if err != nil {
		return Failed, err
	}
	for _, st := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO " + ackDB + ".ack_a VALUES (?, ?, ?, ?)", []any{id, client, cycle, id % 1000}},
		{"INSERT INTO " + ackDB + ".ack_b VALUES (?, ?, REPEAT('p', 150))", []any{id, id}},
		{"UPDATE " + ackDB + ".counters SET n = n + 1, last = ? WHERE k = ?", []any{id, id % 16}},
	} {
		if _, err := tx.Exec(st.q, st.args...); err != nil {
			_ = tx.Rollback()
			return Failed, err
		}
	}
	if err := tx.Commit(); err != nil {
		return InDoubt, err
	}
	return Acked, nil
}

// Sysbench is a running sysbench process (own process group).
type Sysbench struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func sbArgs(s *server.Server, o options) []string {
	return []string{o.sbTest, "--db-driver=mysql", "--mysql-socket=" + s.Socket, "--mysql-user=root",
		"--mysql-db=" + sbDB, "--mysql-storage-engine=" + o.engine, "--tables=" + strconv.Itoa(o.sbTables),
		"--table-size=" + strconv.Itoa(o.sbRows)}
}

func (t *tester) sysbenchPrepare() error {
	_, err := harness.Exec(t.ctx, 10*time.Minute, t.logs+"/sysbench-prepare.log", "sysbench",
		append(sbArgs(t.primary, t.o), "--threads="+strconv.Itoa(t.o.sbTables), "prepare")...)
	return t.primary.Why(err)
}

// startSysbench runs oltp_write_only for d on the primary, output to log.
func (t *tester) startSysbench(d time.Duration, log string) (*Sysbench, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	args := append(sbArgs(t.primary, t.o), "--threads="+strconv.Itoa(t.o.sbThreads),
		"--time="+strconv.Itoa(int(d.Seconds())), "--report-interval=0", "run")
	cmd := exec.Command("sysbench", args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting sysbench: %w", err)
	}
	sb := &Sysbench{cmd: cmd, done: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); f.Close(); close(sb.done) }()
	return sb, nil
}

// Wait for sysbench to end by itself, at most d.
func (sb *Sysbench) Wait(ctx context.Context, d time.Duration) error {
	select {
	case <-sb.done:
		return nil
	case <-time.After(d):
	case <-ctx.Done():
	}
	sb.Stop()
	return fmt.Errorf("sysbench did not end in time (log %s)", sb.log)
}

// Stop kills sysbench (its group) and waits for it.
func (sb *Sysbench) Stop() {
	select {
	case <-sb.done:
		return
	default:
	}
	_ = syscall.Kill(-sb.cmd.Process.Pid, syscall.SIGKILL)
	<-sb.done
}

// Exited reports whether sysbench ended.
func (sb *Sysbench) Exited() bool {
	select {
	case <-sb.done:
		return true
	default:
		return false
	}
}

var reSbTxn = regexp.MustCompile(`(?m)^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)`)

// sbTransactions reads sysbench's final "transactions: N (X per sec.)".
func sbTransactions(out string) (int64, float64, bool) {
	m := reSbTxn.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, false
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	r, _ := strconv.ParseFloat(m[2], 64)
	return n, r, true
}
