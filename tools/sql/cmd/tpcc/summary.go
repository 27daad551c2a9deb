// summary.go writes a TPC-C run's results: runs.csv (one row per engine
// and iteration), transactions.csv (each transaction's count, TPM and
// latency), timeline.csv (TPM and NOPM per interval), the settings and
// summary.md, the seed's table: metric, one column per engine, and
// TidesDB's advantage over each peer. A run of several variants writes
// variants.csv and a summary.md of the variants (variants.go) instead.
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

var txnLabel = map[string]string{"NEW_ORDER": "New-Order", "PAYMENT": "Payment", "ORDER_STATUS": "Order-Status",
	"DELIVERY": "Delivery", "STOCK_LEVEL": "Stock-Level"}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func runRows(o options, rs []Result) [][]string {
	var out [][]string
	for _, r := range rs {
		check := "passed"
		if r.Conditions == 0 {
			check = "not run"
		}
		if strings.Contains(r.Err, "consistency check FAILED") {
			check = "FAILED"
		}
		v := o.variants[r.Variant]
		name, build, malloc := v.Name(), v.Build.Name, v.Malloc
		if o.ext != nil { // neither build nor allocator is known
			name, build, malloc = "external", "", ""
		}
		out = append(out, []string{r.Engine, strconv.Itoa(r.Iteration), strconv.Itoa(o.warehouses), strconv.Itoa(o.buildVU),
			strconv.Itoa(o.runVU), f2(r.BuildSecs), f2(r.Out.TPMC), f2(r.Out.TPMTotal), strconv.FormatInt(r.Out.Count(), 10),
			strconv.FormatInt(r.Out.Errors(), 10), check, strconv.FormatInt(r.DataBytes, 10), report.FirstLine(r.Err),
			name, build, malloc, r.TidesDBBuild})
	}
	return out
}

func txnRows(o options, rs []Result) [][]string {
	var out [][]string
	for _, r := range rs {
		for _, t := range Txns {
			for _, name := range []string{t, t + "_ERR"} {
				s, ok := r.Out.Txn[name]
				if !ok {
					continue
				}
				out = append(out, []string{r.Engine, strconv.Itoa(r.Iteration), name, strconv.FormatInt(s.Count, 10),
					f2(s.TPM), f2(s.Avg), f2(s.P50), f2(s.P90), f2(s.P95), f2(s.P99), f2(s.Max), o.variants[r.Variant].Name()})
			}
		}
	}
	return out
}

func timelineRows(o options, rs []Result) [][]string {
	var out [][]string
	for _, r := range rs {
		for _, p := range r.Out.Timeline {
			out = append(out, []string{r.Engine, strconv.Itoa(r.Iteration), strconv.FormatFloat(p.Second, 'f', 0, 64),
				f2(p.TPM), f2(p.NOPM), o.variants[r.Variant].Name()})
		}
	}
	return out
}

func writeResults(o options, stamp string, rn *runner) error {
	files := []struct {
		name   string
		header []string
		rows   [][]string
	}{
		{"runs.csv", []string{"engine", "iteration", "warehouses", "build_vu", "run_vu", "build_s", "nopm", "tpm",
			"transactions", "errors", "check", "data_bytes", "error", "variant", "build", "malloc", "tidesdb_build"}, runRows(o, rn.results)},
		{"transactions.csv", []string{"engine", "iteration", "txn", "count", "tpm", "avg_ms", "p50_ms", "p90_ms",
			"p95_ms", "p99_ms", "max_ms", "variant"}, txnRows(o, rn.results)},
		{"timeline.csv", []string{"engine", "iteration", "second", "tpm", "nopm", "variant"}, timelineRows(o, rn.results)},
	}
	if o.multi() {
		files = append(files, struct {
			name   string
			header []string
			rows   [][]string
		}{"variants.csv", variantHeader, variantCSV(rn.env, aggregate(o.variants, o.engines, rn.results))})
	}
	for _, f := range files {
		if err := report.WriteCSV(filepath.Join(o.out, f.name), f.header, f.rows); err != nil {
			return err
		}
	}
	if len(rn.Settings) > 0 {
		if err := server.WriteSettings(filepath.Join(o.out, "settings.csv"), rn.Settings); err != nil {
			return err
		}
	}
	notes := append([]string{}, rn.Notes...)
	if o.ext != nil && o.ext.noPrepare {
		notes = append(notes, "the check needs an index on history (h_c_w_id, h_c_d_id, h_c_id), idx_h_check: checked present (the tables are not altered)")
	} else {
		notes = append(notes, "before the first check, history gets an index on (h_c_w_id, h_c_d_id, h_c_id) on every engine checked: go-tpc's check 3.3.2.10 scans it per customer")
	}
	if o.checkEngines != nil {
		notes = append(notes, "consistency check on "+strings.Join(o.checkEngines, ", ")+" only (--check-engines): the other engines' runs are not checked")
	}
	notes = append(notes, fmt.Sprintf("the check runs with %d threads (the run's users, at most one per core): its queries are CPU-bound and each fills a MariaDB temporary table", CheckThreads(o.runVU, runtime.NumCPU())))
	notes = append(notes, rn.MemoryLines(o.engines)...)
	notes = append(notes, rn.BuildLines(o.engines)...)
	md := Markdown(o, stamp, rn.results, notes)
	if o.multi() {
		md = variantMarkdown(o, stamp, rn.results, notes)
	}
	fmt.Print("\n" + md)
	return os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(md), 0o644)
}

// metric is one row of the summary: a value per engine (mean over the
// engine's successful iterations) and whether higher is better.
type metric struct {
	name   string
	higher bool
	format string
	value  func(r Result) float64
}

func metrics() []metric {
	l := []metric{
		{"Schema build time (s)", false, "%.0f", func(r Result) float64 { return r.BuildSecs }},
		{"NOPM (New-Order per minute)", true, "%.0f", func(r Result) float64 { return r.Out.TPMC }},
		{"TPM (all transactions per minute)", true, "%.0f", func(r Result) float64 { return r.Out.TPMTotal }},
	}
	for _, t := range Txns {
		t := t
		for _, q := range []struct {
			n string
			f func(TxnStats) float64
		}{{"avg", func(s TxnStats) float64 { return s.Avg }}, {"p95", func(s TxnStats) float64 { return s.P95 }},
			{"p99", func(s TxnStats) float64 { return s.P99 }}} {
			q := q
			l = append(l, metric{fmt.Sprintf("%s %s (ms)", txnLabel[t], q.n), false, "%.2f",
				func(r Result) float64 { return q.f(r.Out.Txn[t]) }})
		}
	}
	l = append(l, metric{"Failed transactions", false, "%.0f", func(r Result) float64 { return float64(r.Out.Errors()) }},
		metric{"Data on disk (MiB)", false, "%.0f", func(r Result) float64 { return float64(r.DataBytes) / (1 << 20) }})
	return l
}

// mean of a metric over an engine's successful runs (NaN when none).
func mean(rs []Result, engine string, f func(Result) float64) float64 {
	var s float64
	n := 0
	for _, r := range rs {
		if r.Engine == engine && r.Err == "" {
			s += f(r)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// advantage is how many times better TidesDB is than a peer on m:
// TidesDB/peer for throughput, peer/TidesDB for time and latency.
func advantage(m metric, t, p float64) string {
	if math.IsNaN(t) || math.IsNaN(p) {
		return "-"
	}
	if !m.higher {
		t, p = p, t
	}
	if t == 0 && p == 0 {
		return "="
	}
	return report.Ratio(t, p)
}

// Markdown is summary.md.
func Markdown(o options, stamp string, rs []Result, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# tpcc %s\n\n", stamp)
	b.WriteString(report.Settings(o.Lines(), notes))
	t := report.Table{Header: []string{"metric"}}
	for _, e := range o.engines {
		t.Header = append(t.Header, report.EngineLabel(e))
	}
	var peers []string
	if slices.Contains(o.engines, "TidesDB") {
		for _, e := range o.engines {
			if e != "TidesDB" {
				peers = append(peers, e)
				t.Header = append(t.Header, "advantage vs "+report.EngineLabel(e))
			}
		}
	}
	for _, m := range metrics() {
		if o.ext != nil && (m.name == "Data on disk (MiB)" || (o.ext.noPrepare && m.name == "Schema build time (s)")) {
			continue // not measured on an external server / schema not built
		}
		row := []string{m.name}
		for _, e := range o.engines {
			v := mean(rs, e, m.value)
			if math.IsNaN(v) {
				row = append(row, "failed")
			} else {
				row = append(row, fmt.Sprintf(m.format, v))
			}
		}
		for _, p := range peers {
			row = append(row, advantage(m, mean(rs, "TidesDB", m.value), mean(rs, p, m.value)))
		}
		t.Rows = append(t.Rows, row)
	}
	if o.ext == nil {
		b.WriteString("\nAdvantage: how many times better TidesDB is (throughput TidesDB/peer; time, latency, errors and size peer/TidesDB); below 1.00x the peer is better.\n")
	}
	b.WriteString("\n" + t.Markdown())
	var fails []string
	for _, r := range rs {
		if r.Err != "" {
			fails = append(fails, fmt.Sprintf("- %s iteration %d: %s", report.EngineLabel(r.Engine), r.Iteration, report.FirstLine(r.Err)))
		}
	}
	if len(fails) > 0 {
		b.WriteString("\n## Failed runs\n\n" + strings.Join(fails, "\n") + "\n")
	}
	return b.String()
}
