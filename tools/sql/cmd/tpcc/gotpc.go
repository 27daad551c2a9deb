// gotpc.go drives go-tpc (github.com/pingcap/go-tpc, built by
// scripts/mariadb/common.sh into build/go-tpc) and reads what it prints:
//
//	[Current] NEW_ORDER - Takes(s): 10.0, Count: 3913, TPM: 23523.6, Sum(ms): ..., Avg(ms): 5.5,
//	    50th(ms): 5.2, 90th(ms): 8.4, 95th(ms): 9.4, 99th(ms): 13.6, 99.9th(ms): 24.1, Max(ms): 29.4
//	[Summary] NEW_ORDER_ERR - Takes(s): 25.0, Count: 1, ...
//	tpmC: 24527.9, tpmTotal: 54083.4, efficiency: ...
//
// One block of [Current] lines per --interval; the [Summary] lines cover
// the whole run. go-tpc has no ramp-up option: the runner's ramp-up is a
// run of its own whose figures are discarded.
package main

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tidesql/bench/internal/gotpc"
	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/report"
)

// Txns are TPC-C's five transactions, in go-tpc's names.
var Txns = []string{"NEW_ORDER", "PAYMENT", "ORDER_STATUS", "DELIVERY", "STOCK_LEVEL"}

// TxnStats is one [Summary] or [Current] line.
type TxnStats struct {
	Name                         string
	Seconds                      float64
	Count                        int64
	TPM                          float64
	Avg, P50, P90, P95, P99, Max float64 // ms
}

// Point is one interval of the timeline: transactions per minute.
type Point struct {
	Second    float64 // end of the interval, from the start of the run
	TPM, NOPM float64
}

// RunOutput is what a go-tpc run printed.
type RunOutput struct {
	Txn      map[string]TxnStats // [Summary], including *_ERR rows
	TPMC     float64             // go-tpc's tpmC: NEW_ORDER per minute (NOPM)
	TPMTotal float64             // every transaction per minute (TPM)
	Timeline []Point
	Failed   []string // "execute run failed" lines (transactions that failed)
}

// Errors is the sum of the *_ERR counts.
func (r RunOutput) Errors() int64 {
	var n int64
	for name, s := range r.Txn {
		if strings.HasSuffix(name, "_ERR") {
			n += s.Count
		}
	}
	return n
}

// Count is the number of successful transactions.
func (r RunOutput) Count() int64 {
	var n int64
	for _, t := range Txns {
		n += r.Txn[t].Count
	}
	return n
}

var (
	reStats = regexp.MustCompile(`^\[(Current|Summary)\] ([A-Z_]+) - Takes\(s\): ([\d.]+), Count: (\d+), TPM: ([\d.]+), Sum\(ms\): [\d.]+, Avg\(ms\): ([\d.]+), 50th\(ms\): ([\d.]+), 90th\(ms\): ([\d.]+), 95th\(ms\): ([\d.]+), 99th\(ms\): ([\d.]+), 99\.9th\(ms\): [\d.]+, Max\(ms\): ([\d.]+)`)
	reTPMC  = regexp.MustCompile(`^tpmC: ([\d.]+), tpmTotal: ([\d.]+)`)
)

// ParseRun reads a go-tpc run's output; interval is its --interval.
func ParseRun(out string, interval time.Duration) (RunOutput, error) {
	r := RunOutput{Txn: map[string]TxnStats{}}
	var cur map[string]bool // names seen in the current block
	var pt Point
	flush := func() {
		if cur != nil {
			pt.Second = float64(len(r.Timeline)+1) * interval.Seconds()
			r.Timeline = append(r.Timeline, pt)
		}
		cur, pt = map[string]bool{}, Point{}
	}
	sawTPMC := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reStats.FindStringSubmatch(line); m != nil {
			s := TxnStats{Name: m[2], Seconds: atof(m[3]), TPM: atof(m[5]), Avg: atof(m[6]), P50: atof(m[7]),
				P90: atof(m[8]), P95: atof(m[9]), P99: atof(m[10]), Max: atof(m[11])}
			s.Count, _ = strconv.ParseInt(m[4], 10, 64)
			if m[1] == "Summary" {
				r.Txn[s.Name] = s
				continue
			}
			if cur == nil || cur[s.Name] {
				flush()
			}
			cur[s.Name] = true
			if !strings.HasSuffix(s.Name, "_ERR") {
				pt.TPM += s.TPM
				if s.Name == "NEW_ORDER" {
					pt.NOPM = s.TPM
				}
			}
			continue
		}
		if m := reTPMC.FindStringSubmatch(line); m != nil {
			r.TPMC, r.TPMTotal, sawTPMC = atof(m[1]), atof(m[2]), true
			continue
		}
		if strings.Contains(line, "execute run failed") {
			r.Failed = append(r.Failed, line)
		}
	}
	if cur != nil && len(cur) > 0 {
		flush()
	}
	if !sawTPMC || r.Txn["NEW_ORDER"].Count == 0 {
		return r, fmt.Errorf("go-tpc printed no summary (no tpmC or no New-Order); its last lines:\n%s", report.Tail(out, 8))
	}
	if strings.Contains(out, "panic:") {
		return r, fmt.Errorf("go-tpc panicked:\n%s", report.Tail(out, 8))
	}
	return r, nil
}

func atof(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }

// GoTPC runs go-tpc against one server.
type GoTPC struct {
	Path       string
	Host       string // "" is 127.0.0.1
	Port       int
	User, Pass string // "" is root, no password
	DB         string
	Warehouses int
	Engine     string
	Isolation  int // go-tpc: 2 READ COMMITTED, 4 REPEATABLE READ
}

func (g GoTPC) args(threads int) []string {
	// go-tpc takes host:port; a server tpcc started listens on 127.0.0.1:Port.
	host, user := g.Host, g.User
	if host == "" {
		host = "127.0.0.1"
	}
	if user == "" {
		user = "root"
	}
	a := []string{"tpcc", "-H", host, "-P", strconv.Itoa(g.Port), "-U", user}
	if g.Pass != "" {
		a = append(a, "-p", g.Pass)
	}
	return append(a, "-D", g.DB, "--warehouses", strconv.Itoa(g.Warehouses), "-T", strconv.Itoa(threads),
		"--conn-params", "default_storage_engine="+g.Engine)
}

// Prepare loads the schema and data (no check: the runner checks after
// every run).
func (g GoTPC) Prepare(ctx context.Context, threads int, log string) error {
	_, err := g.exec(ctx, time.Duration(600+g.Warehouses*120)*time.Second, log, append(g.args(threads), "prepare", "--no-check"))
	return err
}

// Run runs the mix for d and parses the output.
func (g GoTPC) Run(ctx context.Context, threads int, d, interval time.Duration, log string) (RunOutput, error) {
	a := append(g.args(threads), "--time", d.String(), "--interval", interval.String(), "--isolation",
		strconv.Itoa(g.Isolation), "--ignore-error", "run")
	out, err := g.exec(ctx, d+5*time.Minute, log, a)
	if err != nil {
		return RunOutput{}, err
	}
	return ParseRun(out, interval)
}

// CheckThreads is how many threads run go-tpc's consistency check: the
// run's users, at most one per core (at least 2). Its queries are CPU-bound
// (more threads than cores only interleave them), and each materializes a
// derived table of order_line or history in MariaDB's temporary tables,
// memory no engine setting bounds: with 8 at once a 16-warehouse server
// under a 768 MiB limit lost ~200 MiB to them and was OOM-killed.
func CheckThreads(runVU, cpus int) int {
	n := cpus
	if n < 2 {
		n = 2
	}
	if runVU < n {
		n = runVU
	}
	if n < 1 {
		n = 1
	}
	return n
}

// Check runs go-tpc's consistency check.
func (g GoTPC) Check(ctx context.Context, threads int, log string) (int, error) {
	out, err := g.exec(ctx, time.Duration(300+g.Warehouses*60)*time.Second, log, append(g.args(threads), "check"))
	if err != nil {
		return 0, err
	}
	if bad := gotpc.CheckFailed(out); bad != "" {
		return 0, fmt.Errorf("consistency check FAILED:\n%s", bad)
	}
	return gotpc.CheckedConditions(out), nil
}

func (g GoTPC) exec(ctx context.Context, timeout time.Duration, log string, args []string) (string, error) {
	out, err := harness.Exec(ctx, timeout, log, g.Path, args...)
	if err != nil {
		return out, fmt.Errorf("%s: %w", action(args), err)
	}
	if gotpc.Fatal(out) {
		return out, fmt.Errorf("go-tpc %s failed:\n%s", action(args), report.Tail(out, 8))
	}
	return out, nil
}

// action is the go-tpc subcommand among args.
func action(args []string) string {
	for _, a := range args {
		switch a {
		case "prepare", "run", "check":
			return a
		}
	}
	return strings.Join(args, " ")
}
