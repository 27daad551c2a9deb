// sysbench.go runs sysbench and reads what it prints: the per-interval
// lines ("[ 3s ] thds: 8 tps: ... lat (ms,95%): ... err/s: ..."), the
// final statistics and the latency histogram (p99 comes from it: sysbench
// prints one percentile only).
package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/report"
)

// Interval is one "[ Ns ]" report line.
type Interval struct {
	Second                 int
	Threads                int
	TPS, QPS, P95, ErrPerS float64
}

// Result is what one sysbench run measured.
type Result struct {
	TPS, QPS                float64
	Transactions, Queries   int64
	Errors, Reconnects      int64
	Seconds                 float64
	Min, Avg, Max, P95, P99 float64 // milliseconds
	Intervals               []Interval
}

var (
	reInterval = regexp.MustCompile(`^\[\s*(\d+)s\s*\]\s*thds:\s*(\d+)\s+tps:\s*([\d.]+)\s+qps:\s*([\d.]+).*?lat \(ms,\d+%\):\s*([\d.]+)\s+err/s:?\s*([\d.]+)`)
	reCounted  = regexp.MustCompile(`^\s*(transactions|queries|ignored errors|reconnects):\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	reLatency  = regexp.MustCompile(`^\s*(min|avg|max|\d+th percentile):\s+([\d.]+)`)
	reTotal    = regexp.MustCompile(`^\s*total time:\s+([\d.]+)s`)
	reHist     = regexp.MustCompile(`^\s*([\d.]+)\s+\|[* ]*\s(\d+)\s*$`)
)

// ParseOutput reads sysbench's output. A run that printed no final
// statistics (killed, failed) is an error that quotes its last lines.
func ParseOutput(out string) (Result, error) {
	var r Result
	var hist [][2]float64 // value (ms), count
	final := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reInterval.FindStringSubmatch(line); m != nil {
			iv := Interval{Second: atoi(m[1]), Threads: atoi(m[2]), TPS: atof(m[3]), QPS: atof(m[4]), P95: atof(m[5]), ErrPerS: atof(m[6])}
			r.Intervals = append(r.Intervals, iv)
			continue
		}
		if m := reHist.FindStringSubmatch(line); m != nil {
			hist = append(hist, [2]float64{atof(m[1]), atof(m[2])})
			continue
		}
		if m := reCounted.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			switch m[1] {
			case "transactions":
				r.Transactions, r.TPS, final = n, atof(m[3]), true
			case "queries":
				r.Queries, r.QPS = n, atof(m[3])
			case "ignored errors":
				r.Errors = n
			case "reconnects":
				r.Reconnects = n
			}
			continue
		}
		if m := reTotal.FindStringSubmatch(line); m != nil {
			r.Seconds = atof(m[1])
			continue
		}
		if m := reLatency.FindStringSubmatch(line); m != nil {
			v := atof(m[2])
			switch m[1] {
			case "min":
				r.Min = v
			case "avg":
				r.Avg = v
			case "max":
				r.Max = v
			default:
				r.P95 = v
			}
		}
	}
	if !final {
		return r, fmt.Errorf("sysbench printed no final statistics; its last lines:\n%s", report.Tail(out, 8))
	}
	r.P99 = percentile(hist, 0.99)
	if r.P99 == 0 { // no histogram: the best we know is the max
		r.P99 = math.NaN()
	}
	return r, nil
}

// percentile of a sysbench histogram (value = bucket's upper edge).
func percentile(hist [][2]float64, q float64) float64 {
	var total float64
	for _, h := range hist {
		total += h[1]
	}
	if total == 0 {
		return 0
	}
	var seen float64
	for _, h := range hist {
		seen += h[1]
		if seen >= q*total {
			return h[0]
		}
	}
	return hist[len(hist)-1][0]
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func atof(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }

// Bench is how sysbench reaches the server under test: over Socket as
// root (a server sqlbench started), or, with Socket "", over Host:Port as
// User (an external server).
type Bench struct {
	Path   string // sysbench binary
	Socket string
	Host   string
	Port   int
	User   string
	Pass   string
	DB     string
	Engine string
	Tables int
	Size   int
}

func (b Bench) args(workload string, threads int) []string {
	conn := []string{"--mysql-socket=" + b.Socket, "--mysql-user=root"}
	if b.Socket == "" {
		conn = []string{"--mysql-host=" + b.Host, "--mysql-port=" + strconv.Itoa(b.Port), "--mysql-user=" + b.User}
	}
	if b.Pass != "" {
		conn = append(conn, "--mysql-password="+b.Pass)
	}
	return append(append([]string{workload, "--db-driver=mysql"}, conn...),
		"--mysql-db="+b.DB, "--mysql-storage-engine="+b.Engine, "--tables="+strconv.Itoa(b.Tables),
		"--table-size="+strconv.Itoa(b.Size), "--threads="+strconv.Itoa(threads), "--db-ps-mode=auto",
		"--mysql-ignore-errors=1213,1205,1020,1180")
}

// Prepare creates and fills the tables (sysbench oltp_common prepare, one
// thread per table up to 8); log keeps the output.
func (b Bench) Prepare(ctx context.Context, log string) (string, error) {
	th := b.Tables
	if th > 8 {
		th = 8
	}
	timeout := time.Duration(600+b.Tables*b.Size/2000) * time.Second
	return harness.Exec(ctx, timeout, log, b.Path, append(b.args("oltp_common", th), "prepare")...)
}

// Cleanup drops the tables (sysbench oltp_common cleanup).
func (b Bench) Cleanup(ctx context.Context, log string) (string, error) {
	return harness.Exec(ctx, 10*time.Minute, log, b.Path, append(b.args("oltp_common", 1), "cleanup")...)
}

// Run runs a workload for secs seconds; log, when not "", keeps the output.
func (b Bench) Run(ctx context.Context, workload string, threads, secs, interval int, log string) (Result, error) {
	a := append(b.args(workload, threads), "--time="+strconv.Itoa(secs), "--report-interval="+strconv.Itoa(interval),
		"--percentile=95", "--histogram=on", "run")
	out, err := harness.Exec(ctx, time.Duration(secs+300)*time.Second, log, b.Path, a...)
	if err != nil {
		return Result{}, err
	}
	return ParseOutput(out)
}
