// task.go runs one task of the queue: it (re)creates or finds the table,
// starts writer_threads writers sharing one prepared multi-row INSERT
// and query_threads query threads, cuts an interval every report_every
// (a TSV row, an .errcodes row per error code, a progress line), and
// stops at duration, at max_rows_total rows, on a fatal error (a worker
// whose last 50 statements all failed) or when ctx ends (Ctrl-C).
//
// Statements in flight when the duration ends are allowed to finish and
// count; when ctx ends they are cancelled and not counted.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"tidesql/bench/internal/progress"
)

// maxConsecutiveFailures ends a task whose worker cannot get a
// statement through (server gone, table missing, ...).
const maxConsecutiveFailures = 50

// TaskResult is what a task measured.
type TaskResult struct {
	Task        Task
	Engine      string // the table's engine as the server reports it
	Elapsed     time.Duration
	RowsBefore  int64 // highest transactionid when the task started
	Rows        int64 // rows this task inserted
	Intervals   []Interval
	ByType      []TypeLatency // query latency per type, whole task
	Errors      int64
	Interrupted bool
	Err         error // why the task ended early, if it did
	TSV         string
	DiskBytes   int64 // engine's bytes on disk after the task (--server), 0 if unknown
}

// runEnv is what every task shares.
type runEnv struct {
	out      string        // output directory
	clock    Clock         // pacing clock
	runStart time.Time     // the queue's start: rows' times lie after it
	later    time.Duration // planned time of the tasks after this one
	log      io.Writer     // progress lines
}

// progressf prints "[elapsed, ~left] msg"; left is the current task's
// estimate plus the planned time of the tasks after it.
func (e runEnv) progressf(taskLeft time.Duration, format string, a ...any) {
	fmt.Fprintf(e.log, "[%s elapsed, ~%s left] %s\n", progress.Round(time.Since(e.runStart)),
		progress.Round(taskLeft+e.later), fmt.Sprintf(format, a...))
}

// runTask runs t against db. The returned result is filled as far as the
// task got, also on error.
func runTask(ctx context.Context, db *sql.DB, t Task, env runEnv) (res TaskResult) {
	res = TaskResult{Task: t, Engine: t.Engine, TSV: filepath.Join(env.out, t.LogFile)}
	fail := func(err error) TaskResult {
		res.Err = fmt.Errorf("%s: %w", t.Label(), err)
		return res
	}
	if err := os.MkdirAll(filepath.Dir(res.TSV), 0o755); err != nil {
		return fail(err)
	}
	tsv, err := os.Create(res.TSV)
	if err != nil {
		return fail(err)
	}
	defer tsv.Close()
	errf, err := os.Create(res.TSV + ".errcodes")
	if err != nil {
		return fail(err)
	}
	defer errf.Close()
	_ = WriteTSVRow(tsv, TSVHeader)
	_ = WriteTSVRow(errf, ErrCodesHeader)

	if res.Engine, res.RowsBefore, err = prepareTable(ctx, db, t); err != nil {
		return fail(err)
	}
	if t.Engine != "" && res.Engine != t.Engine {
		return fail(fmt.Errorf("table %s is %s, but the task expects %s", t.Table, res.Engine, t.Engine))
	}
	db.SetMaxOpenConns(t.WriterThreads + t.QueryThreads + 2)
	db.SetMaxIdleConns(t.WriterThreads + t.QueryThreads + 2)
	var ins *sql.Stmt
	if t.WriterThreads > 0 {
		if ins, err = db.PrepareContext(ctx, InsertSQL(t.Table, t.NumCharFields, t.RowsPerInsert)); err != nil {
			return fail(fmt.Errorf("preparing the %d-row INSERT: %w", t.RowsPerInsert, err))
		}
		defer ins.Close()
	}
	qstmts := map[int]*sql.Stmt{}
	if t.QueryThreads > 0 {
		for _, k := range QueryTypes(t.NumSecondaryIndexes) {
			st, err := db.PrepareContext(ctx, QuerySQL(t.Table, k, t.QueryLimit))
			if err != nil {
				return fail(fmt.Errorf("preparing the %s query: %w", queryNames[k], err))
			}
			defer st.Close()
			qstmts[k] = st
		}
	}

	step := fmt.Sprintf("%s [%s %s]", t.Name, res.Engine, t.Phase())
	env.progressf(t.Duration, "%s: started", step)
	start := time.Now()
	rec := NewRecorder(start)
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	var fatalOnce sync.Once
	var fatal error
	setFatal := func(err error) {
		fatalOnce.Do(func() { fatal = err; stop() })
	}
	if t.Duration > 0 {
		timer := time.AfterFunc(t.Duration, stop)
		defer timer.Stop()
	}

	var wg, writers sync.WaitGroup
	var claimed atomic.Int64
	claim := func(want int) int {
		if t.MaxRowsTotal == 0 {
			return want
		}
		for {
			cur := claimed.Load()
			left := t.MaxRowsTotal - cur
			if left <= 0 {
				return 0
			}
			n := int64(want)
			if left < n {
				n = left
			}
			if claimed.CompareAndSwap(cur, cur+n) {
				return int(n)
			}
		}
	}
	perWriter := float64(t.MaxRowsPerSecond) / float64(max(t.WriterThreads, 1))
	for w := 0; w < t.WriterThreads; w++ {
		wg.Add(1)
		writers.Add(1)
		go func(w int) {
			defer wg.Done()
			defer writers.Done()
			if err := writer(ctx, stopCtx, db, ins, t, w, perWriter, env.clock, claim, func(n int) { claimed.Add(-int64(n)) }, rec); err != nil {
				setFatal(err)
			}
		}(w)
	}
	if t.WriterThreads > 0 && t.MaxRowsTotal > 0 {
		// all writers done = the row target is reached
		go func() { writers.Wait(); stop() }()
	}
	tableRows := func() int64 { return res.RowsBefore + rec.Total() }
	for q := 0; q < t.QueryThreads; q++ {
		wg.Add(1)
		go func(q int) {
			defer wg.Done()
			if err := querier(ctx, stopCtx, qstmts, t, q, env, tableRows, rec); err != nil {
				setFatal(err)
			}
		}(q)
	}

	// Each interval's row is written when the next one is cut, so a short
	// last interval can still be merged into it.
	tally := ErrTally{}
	var pending *Snapshot
	write := func() {
		iv := pending.Interval(start)
		res.Intervals = append(res.Intervals, iv)
		res.Errors += iv.Errors
		_ = WriteTSVRow(tsv, iv.Fields())
		for _, e := range tally.Rows(*pending, iv.Elapsed) {
			_ = WriteTSVRow(errf, e.Fields())
		}
	}
	report := func(s Snapshot) {
		msg, left := progressLine(t, s.Interval(start), s.End.Sub(start))
		env.progressf(left, "%s: %s", step, msg)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(t.ReportEvery)
	defer tick.Stop()
loop:
	for {
		select {
		case now := <-tick.C:
			s := rec.Cut(now)
			report(s)
			if pending != nil {
				write()
			}
			pending = &s
		case <-done:
			break loop
		}
	}
	end := time.Now()
	tail := rec.Cut(end)
	switch {
	case pending != nil && tail.End.Sub(tail.Start) < t.ReportEvery/2:
		pending.Merge(tail)
	case pending != nil && tail.Empty():
		write()
		pending = nil
	default:
		if pending != nil {
			write()
		}
		pending = &tail
	}
	if pending != nil {
		if pending.End.Equal(end) {
			report(*pending)
		}
		write()
	}
	res.Elapsed = end.Sub(start)
	res.Rows = rec.Total()
	res.ByType = rec.ByType()
	res.Interrupted = ctx.Err() != nil
	if fatal != nil {
		res.Err = fmt.Errorf("%s: %w", t.Label(), fatal)
	}
	return res
}

// progressLine is the per-interval line (rows, rate, p99s) and the
// task's time left, by its duration or by its rows at the rate so far.
func progressLine(t Task, iv Interval, el time.Duration) (string, time.Duration) {
	left := time.Duration(-1)
	if t.Duration > 0 {
		left = t.Duration - el
	}
	if t.MaxRowsTotal > 0 && iv.Rows > 0 && el > 0 {
		byRows := time.Duration(float64(t.MaxRowsTotal-iv.Rows) / (float64(iv.Rows) / el.Seconds()) * float64(time.Second))
		if left < 0 || byRows < left {
			left = byRows
		}
	}
	if left < 0 {
		left = 0
	}
	s := fmt.Sprintf("%d rows, %.0f rows/s, insert p99 %s ms", iv.Rows, iv.RowsPerS, fnum1(iv.InsP99))
	if t.QueryThreads > 0 {
		s += fmt.Sprintf(", %.0f q/s, query p99 %s ms", iv.QueriesPerS, fnum1(iv.QP99))
	}
	if iv.Errors > 0 {
		s += fmt.Sprintf(", %d errors", iv.Errors)
	}
	return s, left
}

// prepareTable drops and creates the table (create_table) or checks that
// it exists, and returns its engine and its highest transactionid.
func prepareTable(ctx context.Context, db *sql.DB, t Task) (engine string, maxID int64, err error) {
	if t.CreateTable {
		if _, err = db.ExecContext(ctx, "DROP TABLE IF EXISTS `"+t.Table+"`"); err != nil {
			return "", 0, fmt.Errorf("dropping table %s: %w", t.Table, err)
		}
		if _, err = db.ExecContext(ctx, CreateTableSQL(t)); err != nil {
			return "", 0, fmt.Errorf("creating table %s: %w\n%s", t.Table, err, CreateTableSQL(t))
		}
	}
	err = db.QueryRowContext(ctx, "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
		t.Table).Scan(&engine)
	if err == sql.ErrNoRows {
		return "", 0, fmt.Errorf("table %s does not exist and create_table is false: an earlier task must create it", t.Table)
	}
	if err != nil {
		return "", 0, fmt.Errorf("looking up table %s: %w", t.Table, err)
	}
	engine = EngineOf("ENGINE=" + engine)
	if err = db.QueryRowContext(ctx, "SELECT COALESCE(MAX(transactionid), 0) FROM `"+t.Table+"`").Scan(&maxID); err != nil {
		return engine, 0, fmt.Errorf("reading the highest transactionid of %s: %w", t.Table, err)
	}
	return engine, maxID, nil
}

// writer inserts batches until stopCtx ends or no rows are left to claim.
func writer(ctx, stopCtx context.Context, db *sql.DB, ins *sql.Stmt, t Task, w int, perSecond float64, clock Clock,
	claim func(int) int, unclaim func(int), rec *Recorder) error {
	gen := NewRowGen(uint64(time.Now().UnixNano())+uint64(w)*7919, t.NumCharFields, t.LengthCharFields, t.PercentCompressible)
	lim := NewRowLimiter(clock, perSecond)
	cols := gen.Columns()
	args := make([]any, t.RowsPerInsert*cols)
	failures := 0
	for stopCtx.Err() == nil {
		n := claim(t.RowsPerInsert)
		if n == 0 {
			return nil
		}
		if err := lim.Wait(stopCtx, n); err != nil {
			unclaim(n)
			return nil
		}
		gen.Fill(args, n, time.Now().Truncate(time.Microsecond))
		t0 := time.Now()
		var err error
		if n == t.RowsPerInsert {
			_, err = ins.ExecContext(ctx, args...)
		} else { // the last, short batch of max_rows_total
			_, err = db.ExecContext(ctx, InsertSQL(t.Table, t.NumCharFields, n), args[:n*cols]...)
		}
		d := time.Since(t0)
		if err != nil {
			unclaim(n)
			if ctx.Err() != nil {
				return nil
			}
			rec.Error("insert", err)
			if failures++; failures >= maxConsecutiveFailures {
				return fmt.Errorf("writer %d: %d batches in a row failed, the last with: %w", w, failures, err)
			}
			continue
		}
		failures = 0
		rec.Insert(n, d)
	}
	return nil
}

// querier runs query thread q: it waits until the table holds
// query_start_at_rows rows, then runs the query types round-robin at its
// share of queries_per_second.
func querier(ctx, stopCtx context.Context, stmts map[int]*sql.Stmt, t Task, q int, env runEnv,
	tableRows func() int64, rec *Recorder) error {
	for tableRows() < t.QueryStartAtRows {
		if env.clock.Sleep(stopCtx, 20*time.Millisecond) != nil {
			return nil
		}
	}
	var interval time.Duration
	if t.QueriesPerSecond > 0 {
		interval = time.Duration(float64(t.QueryThreads) / t.QueriesPerSecond * float64(time.Second))
	}
	pacer := NewPacer(env.clock, interval, interval*time.Duration(q)/time.Duration(t.QueryThreads))
	gen := NewRowGen(uint64(time.Now().UnixNano())+uint64(q)*104729, 0, 1, 0)
	types := QueryTypes(t.NumSecondaryIndexes)
	failures := 0
	for k := q; ; k++ {
		if pacer.Wait(stopCtx) != nil || stopCtx.Err() != nil {
			return nil
		}
		kind := types[k%len(types)]
		args := QueryArgs(gen, kind, tableRows(), env.runStart, time.Now())
		t0 := time.Now()
		rows, err := stmts[kind].QueryContext(ctx, args...)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		d := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			rec.Error("query", err)
			if failures++; failures >= maxConsecutiveFailures {
				return fmt.Errorf("query thread %d: %d queries in a row failed, the last (%s) with: %w", q, failures, queryNames[kind], err)
			}
			continue
		}
		failures = 0
		rec.Query(queryNames[kind], d)
	}
}

// fnum1 prints a latency with one decimal ("-" when missing).
func fnum1(v float64) string {
	if v != v {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
