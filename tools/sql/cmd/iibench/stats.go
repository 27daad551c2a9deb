// stats.go collects what a task measures, one report_every interval at a
// time: rows inserted, per-batch insert latency and per-query latency in
// HDR histograms, and error counts by MySQL error code. Cut hands over an
// interval's Snapshot and starts the next; a snapshot becomes a row of
// the task's TSV and rows of the <log_file>.errcodes sidecar. A short
// last interval is merged into the one before it (Merge), so a task's
// TSV has no few-millisecond tail with a meaningless rate.
//
// Invariant: every recorded event lands in exactly one snapshot (Cut
// swaps the counters under the same lock the recorders take).
package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-sql-driver/mysql"
)

// Interval is one row of a task's TSV. Latencies are in milliseconds and
// NaN when the interval had no sample.
type Interval struct {
	Elapsed                float64 // seconds from the task's start to the interval's end
	Rows                   int64   // rows inserted by the task so far
	RowsPerS               float64 // in this interval
	InsP50, InsP95, InsP99 float64
	InsMax                 float64
	Batches                int64
	QueriesPerS            float64
	QP50, QP95, QP99       float64
	Queries                int64
	Errors                 int64 // failed batches and queries in this interval
}

// TSVHeader is the first line of a task's TSV.
var TSVHeader = []string{"elapsed_s", "rows", "rows_per_s", "insert_p50_ms", "insert_p95_ms", "insert_p99_ms",
	"insert_max_ms", "queries_per_s", "query_p50_ms", "query_p95_ms", "query_p99_ms", "errors"}

// ErrCodesHeader is the first line of a .errcodes sidecar.
var ErrCodesHeader = []string{"elapsed_s", "kind", "code", "int_count", "cum_count"}

// ErrCount is one row of the .errcodes sidecar.
type ErrCount struct {
	Elapsed  float64
	Kind     string // insert or query
	Code     int    // MySQL error number; 0 for a client-side error (connection lost, ...)
	Int, Cum int64
}

type errKey struct {
	kind string
	code int
}

// Snapshot is what one interval recorded.
type Snapshot struct {
	Start, End time.Time
	Total      int64 // rows inserted by the task at End
	Rows       int64 // in the interval
	Batches    int64
	Queries    int64
	Ins, Qry   *hdrhistogram.Histogram
	Errs       map[errKey]int64
}

// Empty reports whether nothing was recorded in the interval.
func (s Snapshot) Empty() bool { return s.Batches == 0 && s.Queries == 0 && len(s.Errs) == 0 }

// Merge adds the later snapshot o to s, which then spans both.
func (s *Snapshot) Merge(o Snapshot) {
	s.End, s.Total = o.End, o.Total
	s.Rows += o.Rows
	s.Batches += o.Batches
	s.Queries += o.Queries
	s.Ins.Merge(o.Ins)
	s.Qry.Merge(o.Qry)
	for k, n := range o.Errs {
		s.Errs[k] += n
	}
}

// Interval is the snapshot's TSV row; taskStart dates it.
func (s Snapshot) Interval(taskStart time.Time) Interval {
	secs := s.End.Sub(s.Start).Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	iv := Interval{
		Elapsed: s.End.Sub(taskStart).Seconds(), Rows: s.Total, RowsPerS: float64(s.Rows) / secs,
		InsP50: ms(s.Ins, 50), InsP95: ms(s.Ins, 95), InsP99: ms(s.Ins, 99), InsMax: math.NaN(),
		Batches: s.Batches, QueriesPerS: float64(s.Queries) / secs,
		QP50: ms(s.Qry, 50), QP95: ms(s.Qry, 95), QP99: ms(s.Qry, 99), Queries: s.Queries,
	}
	if s.Ins.TotalCount() > 0 {
		iv.InsMax = float64(s.Ins.Max()) / 1000
	}
	for _, n := range s.Errs {
		iv.Errors += n
	}
	return iv
}

// ErrTally keeps the cumulative error counts of a task's sidecar.
type ErrTally map[errKey]int64

// Rows are the sidecar rows of a snapshot dated elapsed, by kind and code.
func (t ErrTally) Rows(s Snapshot, elapsed float64) []ErrCount {
	var ec []ErrCount
	for k, n := range s.Errs {
		t[k] += n
		ec = append(ec, ErrCount{Elapsed: elapsed, Kind: k.kind, Code: k.code, Int: n, Cum: t[k]})
	}
	sort.Slice(ec, func(i, j int) bool {
		if ec[i].Kind != ec[j].Kind {
			return ec[i].Kind < ec[j].Kind
		}
		return ec[i].Code < ec[j].Code
	})
	return ec
}

// Recorder is shared by a task's workers.
type Recorder struct {
	mu      sync.Mutex
	last    time.Time // end of the previous interval
	cur     Snapshot  // the interval being recorded
	total   int64     // rows, whole task
	lastErr error
	byType  map[string]*hdrhistogram.Histogram // query latency per type, whole task
}

// Latencies are recorded in microseconds, 1 us to 1 h, 3 significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// NewRecorder starts a recorder whose first interval starts at start.
func NewRecorder(start time.Time) *Recorder {
	r := &Recorder{last: start, byType: map[string]*hdrhistogram.Histogram{}}
	r.cur = r.fresh()
	return r
}

func (r *Recorder) fresh() Snapshot {
	return Snapshot{Start: r.last, Ins: newHist(), Qry: newHist(), Errs: map[errKey]int64{}}
}

func micros(d time.Duration) int64 {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	return us
}

// Insert records a batch of n rows that took d.
func (r *Recorder) Insert(n int, d time.Duration) {
	r.mu.Lock()
	_ = r.cur.Ins.RecordValue(micros(d))
	r.cur.Rows += int64(n)
	r.total += int64(n)
	r.cur.Batches++
	r.mu.Unlock()
}

// Query records a query of a type (pk, pdc, ...) that took d.
func (r *Recorder) Query(kind string, d time.Duration) {
	r.mu.Lock()
	_ = r.cur.Qry.RecordValue(micros(d))
	h := r.byType[kind]
	if h == nil {
		h = newHist()
		r.byType[kind] = h
	}
	_ = h.RecordValue(micros(d))
	r.cur.Queries++
	r.mu.Unlock()
}

// TypeLatency is one query type's latency over the whole task.
type TypeLatency struct {
	Kind     string
	Count    int64
	P50, P99 float64 // ms
	Max      float64 // ms
}

// ByType is the query latency per type over the whole task, in the
// order of queryNames.
func (r *Recorder) ByType() []TypeLatency {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []TypeLatency
	for _, k := range queryNames {
		if h := r.byType[k]; h != nil {
			out = append(out, TypeLatency{Kind: k, Count: h.TotalCount(), P50: ms(h, 50), P99: ms(h, 99), Max: float64(h.Max()) / 1000})
		}
	}
	return out
}

// Error counts a failed batch or query by its MySQL error code.
func (r *Recorder) Error(kind string, err error) {
	r.mu.Lock()
	r.cur.Errs[errKey{kind, ErrCode(err)}]++
	r.lastErr = err
	r.mu.Unlock()
}

// ErrCode is the MySQL error number of err, 0 when it has none.
func ErrCode(err error) int {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return int(me.Number)
	}
	return 0
}

// Total is the rows inserted so far.
func (r *Recorder) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// LastError is the latest recorded error (nil if none).
func (r *Recorder) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

func ms(h *hdrhistogram.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return math.NaN()
	}
	return float64(h.ValueAtQuantile(q)) / 1000
}

// Cut ends the interval at now, returns it and starts the next.
func (r *Recorder) Cut(now time.Time) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.cur
	s.End, s.Total = now, r.total
	r.last = now
	r.cur = r.fresh()
	return s
}

// fnum prints a float for the TSV: 3 decimals, "nan" when missing.
func fnum(v float64) string {
	if math.IsNaN(v) {
		return "nan"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Fields are the interval's TSV cells, in TSVHeader order.
func (iv Interval) Fields() []string {
	return []string{fnum(iv.Elapsed), strconv.FormatInt(iv.Rows, 10), fnum(iv.RowsPerS),
		fnum(iv.InsP50), fnum(iv.InsP95), fnum(iv.InsP99), fnum(iv.InsMax),
		fnum(iv.QueriesPerS), fnum(iv.QP50), fnum(iv.QP95), fnum(iv.QP99), strconv.FormatInt(iv.Errors, 10)}
}

// Fields are the error row's TSV cells, in ErrCodesHeader order.
func (e ErrCount) Fields() []string {
	return []string{fnum(e.Elapsed), e.Kind, strconv.Itoa(e.Code), strconv.FormatInt(e.Int, 10), strconv.FormatInt(e.Cum, 10)}
}

// WriteTSVRow writes tab-separated cells and a newline.
func WriteTSVRow(w io.Writer, cells []string) error {
	for i, c := range cells {
		if i > 0 {
			if _, err := io.WriteString(w, "\t"); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, c); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ParseTSV reads a task TSV back (the summary of a finished run and the
// tests use it).
func ParseTSV(text string) ([]Interval, error) {
	var out []Interval
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 0 || lines[0] != strings.Join(TSVHeader, "\t") {
		return nil, fmt.Errorf("not an iibench TSV: the header is not %q", strings.Join(TSVHeader, "\t"))
	}
	for n, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(TSVHeader) {
			return nil, fmt.Errorf("line %d: %d cells, want %d", n+2, len(f), len(TSVHeader))
		}
		v := make([]float64, len(f))
		for i, c := range f {
			x, err := strconv.ParseFloat(c, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d, column %s: %q is not a number", n+2, TSVHeader[i], c)
			}
			v[i] = x
		}
		out = append(out, Interval{Elapsed: v[0], Rows: int64(v[1]), RowsPerS: v[2], InsP50: v[3], InsP95: v[4],
			InsP99: v[5], InsMax: v[6], QueriesPerS: v[7], QP50: v[8], QP95: v[9], QP99: v[10], Errors: int64(v[11])})
	}
	return out, nil
}
