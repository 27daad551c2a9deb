// summary.go writes a sweep's results: the summary and detail CSVs, the
// settings table and summary.md, whose tables give each engine's TPS and
// latency side by side with TidesDB's ratios to InnoDB and MyRocks.
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

var summaryHeader = []string{"engine", "workload", "threads", "table_size", "iteration", "tps", "qps",
	"avg_ms", "p95_ms", "p99_ms", "max_ms", "errors", "reconnects", "data_bytes", "error"}

var detailHeader = []string{"engine", "workload", "threads", "table_size", "iteration", "second", "tps", "qps",
	"p95_ms", "err_per_s"}

func f2(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func summaryRows(rows []Row) [][]string {
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.Engine, r.Workload, strconv.Itoa(r.Threads), strconv.Itoa(r.TableSize),
			strconv.Itoa(r.Iteration), f2(r.R.TPS), f2(r.R.QPS), f2(r.R.Avg), f2(r.R.P95), f2(r.R.P99), f2(r.R.Max),
			strconv.FormatInt(r.R.Errors, 10), strconv.FormatInt(r.R.Reconnects, 10),
			strconv.FormatInt(r.DataBytes, 10), report.FirstLine(r.Err)})
	}
	return out
}

func detailRows(rows []Row) [][]string {
	var out [][]string
	for _, r := range rows {
		for _, iv := range r.R.Intervals {
			out = append(out, []string{r.Engine, r.Workload, strconv.Itoa(r.Threads), strconv.Itoa(r.TableSize),
				strconv.Itoa(r.Iteration), strconv.Itoa(iv.Second), f2(iv.TPS), f2(iv.QPS), f2(iv.P95), f2(iv.ErrPerS)})
		}
	}
	return out
}

func writeResults(cfg Config, stamp string, sw *sweep) error {
	if err := report.WriteCSV(filepath.Join(cfg.Out, "summary_"+stamp+".csv"), summaryHeader, summaryRows(sw.rows)); err != nil {
		return err
	}
	if err := report.WriteCSV(filepath.Join(cfg.Out, "detail_"+stamp+".csv"), detailHeader, detailRows(sw.rows)); err != nil {
		return err
	}
	if len(sw.Settings) > 0 {
		if err := server.WriteSettings(filepath.Join(cfg.Out, "settings_"+stamp+".csv"), sw.Settings); err != nil {
			return err
		}
	}
	notes := append(append([]string{}, sw.Notes...), sw.MemoryLines(cfg.Engines)...)
	notes = append(notes, sw.BuildLines(cfg.Engines)...)
	f, err := os.Create(filepath.Join(cfg.Out, "summary.md"))
	if err != nil {
		return err
	}
	md := Markdown(cfg, stamp, sw.rows, notes)
	if _, err := io.WriteString(f, md); err != nil {
		f.Close()
		return err
	}
	fmt.Print("\n" + md)
	return f.Close()
}

// cell is the mean over iterations of one engine/workload/threads/size.
type cell struct {
	tps, p95, p99 float64
	errors        int64
	n             int
	failed        bool
}

type cellKey struct {
	engine, workload string
	threads, size    int
}

func cells(rows []Row) map[cellKey]*cell {
	m := map[cellKey]*cell{}
	for _, r := range rows {
		k := cellKey{r.Engine, r.Workload, r.Threads, r.TableSize}
		c := m[k]
		if c == nil {
			c = &cell{}
			m[k] = c
		}
		if r.Err != "" {
			c.failed = true
			continue
		}
		c.tps += r.R.TPS
		c.p95 += r.R.P95
		if !math.IsNaN(r.R.P99) {
			c.p99 += r.R.P99
		}
		c.errors += r.R.Errors
		c.n++
	}
	for _, c := range m {
		if c.n > 0 {
			c.tps /= float64(c.n)
			c.p95 /= float64(c.n)
			c.p99 /= float64(c.n)
		}
	}
	return m
}

// Markdown is summary.md: the configuration, a throughput table with
// TidesDB's ratios, a latency table and the data size on disk.
func Markdown(cfg Config, stamp string, rows []Row, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# sqlbench %s\n\n", stamp)
	b.WriteString(report.Settings(cfg.Lines(), notes))
	m := cells(rows)
	get := func(e, w string, th, size int) *cell { return m[cellKey{e, w, th, size}] }
	show := func(c *cell, v func(*cell) float64, format string) string {
		switch {
		case c == nil:
			return "-"
		case c.n == 0:
			return "failed"
		}
		return fmt.Sprintf(format, v(c))
	}
	hasT := slices.Contains(cfg.Engines, "TidesDB")
	for _, size := range cfg.TableSizes {
		fmt.Fprintf(&b, "\n## %d tables x %d rows: transactions per second\n\n", cfg.Tables, size)
		t := report.Table{Header: []string{"workload", "threads"}}
		for _, e := range cfg.Engines {
			t.Header = append(t.Header, report.EngineLabel(e))
		}
		var others []string
		if hasT {
			for _, e := range cfg.Engines {
				if e != "TidesDB" {
					others = append(others, e)
					t.Header = append(t.Header, "TidesDB/"+report.EngineLabel(e))
				}
			}
		}
		lat := report.Table{Header: []string{"workload", "threads"}}
		for _, e := range cfg.Engines {
			lat.Header = append(lat.Header, report.EngineLabel(e)+" p95", report.EngineLabel(e)+" p99")
		}
		for _, w := range cfg.Workloads {
			for _, th := range cfg.Threads {
				row := []string{w, strconv.Itoa(th)}
				lrow := []string{w, strconv.Itoa(th)}
				for _, e := range cfg.Engines {
					c := get(e, w, th, size)
					tps := show(c, func(c *cell) float64 { return c.tps }, "%.0f")
					if c != nil && c.errors > 0 {
						tps += fmt.Sprintf(" (%d err)", c.errors)
					}
					row = append(row, tps)
					lrow = append(lrow, show(c, func(c *cell) float64 { return c.p95 }, "%.2f"),
						show(c, func(c *cell) float64 { return c.p99 }, "%.2f"))
				}
				for _, o := range others {
					a, z := get("TidesDB", w, th, size), get(o, w, th, size)
					if a == nil || z == nil || a.n == 0 || z.n == 0 {
						row = append(row, "-")
						continue
					}
					row = append(row, report.Ratio(a.tps, z.tps))
				}
				t.Rows = append(t.Rows, row)
				lat.Rows = append(lat.Rows, lrow)
			}
		}
		b.WriteString(t.Markdown())
		fmt.Fprintf(&b, "\n## %d tables x %d rows: latency (ms)\n\n", cfg.Tables, size)
		b.WriteString(lat.Markdown())
		disk := report.Table{Header: []string{"engine", "data on disk after the last run"}}
		for _, e := range cfg.Engines {
			var last int64
			for _, r := range rows {
				if r.Engine == e && r.TableSize == size && r.DataBytes > 0 {
					last = r.DataBytes
				}
			}
			if last > 0 {
				disk.Rows = append(disk.Rows, []string{report.EngineLabel(e), server.FormatBytes(last)})
			}
		}
		if len(disk.Rows) > 0 {
			b.WriteString("\n")
			b.WriteString(disk.Markdown())
		}
	}
	var fails []string
	for _, r := range rows {
		if r.Err != "" {
			fails = append(fails, fmt.Sprintf("- %s %s %d threads (%d rows), iteration %d: %s",
				report.EngineLabel(r.Engine), r.Workload, r.Threads, r.TableSize, r.Iteration, report.FirstLine(r.Err)))
		}
	}
	if len(fails) > 0 {
		b.WriteString("\n## Failed runs\n\n" + strings.Join(fails, "\n") + "\n")
	}
	return b.String()
}
