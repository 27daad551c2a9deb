// summary.go condenses the tasks' intervals into the run's summary: per
// task the rows, the average rate, insert p99 and query p50/p99 as the
// mean and the worst of the intervals, errors; per phase the TidesDB
// rate as a ratio of InnoDB's and MyRocks'. It prints the summary and
// writes summary.md and summary.csv (which the chart script reads).
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

// meanWorst is the mean and the maximum of the intervals' values that
// are not NaN (NaN, NaN when there are none).
func meanWorst(ivs []Interval, f func(Interval) float64) (mean, worst float64) {
	n, sum := 0, 0.0
	worst = math.NaN()
	for _, iv := range ivs {
		v := f(iv)
		if math.IsNaN(v) {
			continue
		}
		n++
		sum += v
		if math.IsNaN(worst) || v > worst {
			worst = v
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	return sum / float64(n), worst
}

// Rate is the task's average rows per second.
func (r TaskResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Rows) / r.Elapsed.Seconds()
}

func (r TaskResult) status() string {
	switch {
	case r.Err != nil:
		return "failed"
	case r.Interrupted:
		return "interrupted"
	}
	return "ok"
}

// RunInfo is what the summary says about the run as a whole.
type RunInfo struct {
	Config      string
	Mode        string   // "plain client" or "--server"
	PresetLines []string // --server: the preset's Summary()
	Notes       []string // memory notes, drop-caches notes, failures
	WithDisk    bool
}

var summaryHeader = []string{"task", "engine", "phase", "rows", "elapsed_s", "rows_per_s", "insert_p99_mean_ms", "insert_p99_worst_ms",
	"query_p50_mean_ms", "query_p50_worst_ms", "query_p99_mean_ms", "query_p99_worst_ms", "errors", "disk_bytes", "status", "tsv"}

// summaryRows are the per-task rows (CSV cells, summaryHeader order).
func summaryRows(out string, res []TaskResult) [][]string {
	var rows [][]string
	for _, r := range res {
		ip, iw := meanWorst(r.Intervals, func(iv Interval) float64 { return iv.InsP99 })
		q5, q5w := meanWorst(r.Intervals, func(iv Interval) float64 { return iv.QP50 })
		q9, q9w := meanWorst(r.Intervals, func(iv Interval) float64 { return iv.QP99 })
		rel, _ := filepath.Rel(out, r.TSV)
		rows = append(rows, []string{r.Task.Name, r.Engine, r.Task.Phase(), strconv.FormatInt(r.Rows, 10),
			fnum(r.Elapsed.Seconds()), fmt.Sprintf("%.0f", r.Rate()), fnum(ip), fnum(iw), fnum(q5), fnum(q5w), fnum(q9), fnum(q9w),
			strconv.FormatInt(r.Errors, 10), strconv.FormatInt(r.DiskBytes, 10), r.status(), rel})
	}
	return rows
}

// phaseRates sums rows and time per engine and phase.
func phaseRates(res []TaskResult) map[string]map[string]float64 {
	rows := map[string]map[string]float64{}
	secs := map[string]map[string]float64{}
	for _, r := range res {
		p := r.Task.Phase()
		if rows[p] == nil {
			rows[p], secs[p] = map[string]float64{}, map[string]float64{}
		}
		rows[p][r.Engine] += float64(r.Rows)
		secs[p][r.Engine] += r.Elapsed.Seconds()
	}
	out := map[string]map[string]float64{}
	for p, m := range rows {
		out[p] = map[string]float64{}
		for e, n := range m {
			if secs[p][e] > 0 {
				out[p][e] = n / secs[p][e]
			}
		}
	}
	return out
}

// ratioTable is per phase the engines' rates and TidesDB's ratios.
func ratioTable(res []TaskResult) report.Table {
	t := report.Table{Header: []string{"phase", "TidesDB rows/s", "InnoDB rows/s", "MyRocks rows/s", "TidesDB/InnoDB", "TidesDB/MyRocks"}}
	rates := phaseRates(res)
	cell := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", v)
	}
	for _, p := range []string{"load", "mixed"} {
		m, ok := rates[p]
		if !ok {
			continue
		}
		t.Rows = append(t.Rows, []string{p, cell(m["TidesDB"]), cell(m["InnoDB"]), cell(m["RocksDB"]),
			report.Ratio(m["TidesDB"], m["InnoDB"]), report.Ratio(m["TidesDB"], m["RocksDB"])})
	}
	return t
}

// taskTable is the per-task table for the terminal and summary.md.
func taskTable(out string, res []TaskResult, withDisk bool) report.Table {
	t := report.Table{Header: []string{"task", "engine", "phase", "rows", "elapsed", "rows/s", "ins p99 mean/worst ms",
		"q p50 mean/worst ms", "q p99 mean/worst ms", "errors"}}
	if withDisk {
		t.Header = append(t.Header, "disk")
	}
	t.Header = append(t.Header, "status")
	for i, c := range summaryRows(out, res) {
		r := res[i]
		row := []string{c[0], c[1], c[2], c[3], fmt.Sprintf("%.1fs", r.Elapsed.Seconds()), c[5],
			pair(c[6], c[7]), pair(c[8], c[9]), pair(c[10], c[11]), c[12]}
		if withDisk {
			d := "-"
			if r.DiskBytes > 0 {
				d = server.FormatBytes(r.DiskBytes)
			}
			row = append(row, d)
		}
		rows := append(row, c[14])
		t.Rows = append(t.Rows, rows)
	}
	return t
}

func pair(a, b string) string {
	short := func(s string) string {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return short(a) + " / " + short(b)
}

// WriteSummary prints the summary to w and writes summary.md and
// summary.csv into out.
func WriteSummary(w io.Writer, out string, info RunInfo, res []TaskResult) error {
	tasks := taskTable(out, res, info.WithDisk)
	ratios := ratioTable(res)
	fmt.Fprintf(w, "\niibench summary (%s, %s)\n", info.Config, info.Mode)
	for _, l := range info.PresetLines {
		fmt.Fprintln(w, "  "+l)
	}
	for _, n := range info.Notes {
		fmt.Fprintln(w, "  note: "+n)
	}
	fmt.Fprintln(w)
	tasks.Text(w)
	fmt.Fprintln(w)
	ratios.Text(w)
	if bt := byTypeTable(res); len(bt.Rows) > 0 {
		fmt.Fprintln(w)
		bt.Text(w)
	}
	for _, r := range res {
		if r.Err != nil {
			fmt.Fprintf(w, "\nerror: %v\n", r.Err)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# iibench summary\n\nTask file: `%s`; mode: %s.\n\n", info.Config, info.Mode)
	b.WriteString(report.Settings(info.PresetLines, info.Notes))
	b.WriteString("\nPer task (latencies: mean and worst of the report intervals):\n\n")
	b.WriteString(tasks.Markdown())
	if bt := byTypeTable(res); len(bt.Rows) > 0 {
		b.WriteString("\nQuery latency by type (whole task):\n\n")
		b.WriteString(bt.Markdown())
	}
	b.WriteString("\nRows per second by phase (all tasks of an engine and phase):\n\n")
	b.WriteString(ratios.Markdown())
	for _, r := range res {
		if r.Err != nil {
			fmt.Fprintf(&b, "\nError: `%v`\n", r.Err)
		}
	}
	b.WriteString("\nIntervals: one TSV per task (the `tsv` column of summary.csv); error codes in `<tsv>.errcodes`.\n")
	if err := os.WriteFile(filepath.Join(out, "summary.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return report.WriteCSV(filepath.Join(out, "summary.csv"), summaryHeader, summaryRows(out, res))
}

// byTypeTable is each task's query latency per query type.
func byTypeTable(res []TaskResult) report.Table {
	t := report.Table{Header: []string{"task", "engine", "query", "count", "p50 ms", "p99 ms", "max ms"}}
	for _, r := range res {
		for _, q := range r.ByType {
			t.Rows = append(t.Rows, []string{r.Task.Name, r.Engine, q.Kind, strconv.FormatInt(q.Count, 10),
				fmt.Sprintf("%.2f", q.P50), fmt.Sprintf("%.2f", q.P99), fmt.Sprintf("%.2f", q.Max)})
		}
	}
	return t
}
