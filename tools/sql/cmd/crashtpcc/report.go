// report.go: one line per cycle, a summary per preset (kills, orders
// acknowledged and lost, checks passed, recovery p50/p99), written to
// cycles.csv and summary.md as well.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

// Cycle is one kill, restart and check.
type Cycle struct {
	Preset         string
	N              int
	KillAt         float64 // seconds into the cycle's load
	Acked          int     // New-Orders whose COMMIT returned OK
	Present        int     // of those, wholly present after the restart
	Lost           int     // wholly absent
	Holes          int     // lost but older than a present one (not a prefix)
	Partial        int     // half present (atomicity)
	InDoubt        int     // COMMIT sent, no answer (the kill)
	InDoubtPresent int
	Earlier        int // orders of earlier cycles re-checked
	EarlierMissing int
	DriverErrors   int
	Check          string // passed, FAILED, error
	IndexErr       bool
	VerifyErr      bool
	Recovery       float64 // restart to ready, seconds
	RestartErr     string
	LostKeys       string
	Problems       []string
}

// Failures are the reasons this cycle fails the test.
func (c Cycle) Failures() []string {
	var f []string
	if c.RestartErr != "" {
		f = append(f, "server did not restart: "+report.FirstLine(c.RestartErr))
		return f
	}
	if c.Preset == server.Durable && c.Lost > 0 {
		f = append(f, fmt.Sprintf("%d acknowledged orders lost at the durable preset: %s", c.Lost, c.LostKeys))
	}
	if c.Partial > 0 {
		f = append(f, fmt.Sprintf("%d orders partly present", c.Partial))
	}
	if c.EarlierMissing > 0 {
		f = append(f, fmt.Sprintf("%d orders present after an earlier restart are gone", c.EarlierMissing))
	}
	if c.Check != "passed" {
		f = append(f, "go-tpc check "+c.Check)
	}
	if c.IndexErr {
		f = append(f, "a secondary index does not match its table")
	}
	if c.VerifyErr {
		f = append(f, "the logged orders could not be read")
	}
	if c.Acked == 0 {
		f = append(f, "no New-Order acknowledged before the kill (nothing tested)")
	}
	return f
}

func cycleHeader() string {
	return fmt.Sprintf("%-8s %5s %8s %7s %7s %5s %5s %7s %9s %13s %-7s %10s",
		"preset", "cycle", "kill_s", "acked", "found", "lost", "holes", "partial", "in_doubt", "earlier_miss", "check", "recovery_s")
}

// Line is the cycle's row under cycleHeader.
func (c Cycle) Line() string {
	if c.RestartErr != "" {
		return fmt.Sprintf("%-8s %5d %8.1f %7d  SERVER DID NOT RESTART: %s", c.Preset, c.N, c.KillAt, c.Acked, report.FirstLine(c.RestartErr))
	}
	return fmt.Sprintf("%-8s %5d %8.1f %7d %7d %5d %5d %7d %9s %13s %-7s %10.2f",
		c.Preset, c.N, c.KillAt, c.Acked, c.Present, c.Lost, c.Holes, c.Partial,
		fmt.Sprintf("%d/%d", c.InDoubtPresent, c.InDoubt), fmt.Sprintf("%d/%d", c.EarlierMissing, c.Earlier), c.Check, c.Recovery)
}

// Percentile is the nearest-rank p-th percentile of v (0 for none).
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64{}, v...)
	sort.Float64s(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	if k < 0 {
		k = 0
	}
	if k >= len(s) {
		k = len(s) - 1
	}
	return s[k]
}

// Summary of one preset's cycles.
type Summary struct {
	Preset                                  string
	Cycles, Acked, Lost, Holes, Partial     int
	InDoubt, InDoubtPresent, EarlierMissing int
	ChecksPassed, Failed                    int
	MaxLostCycle                            int
	RecP50, RecP99, RecMax                  float64
}

// Summarize groups cycles by preset, in first-seen order.
func Summarize(cycles []Cycle) []Summary {
	var out []Summary
	idx := map[string]int{}
	rec := map[string][]float64{}
	for _, c := range cycles {
		i, ok := idx[c.Preset]
		if !ok {
			i = len(out)
			idx[c.Preset] = i
			out = append(out, Summary{Preset: c.Preset})
		}
		s := &out[i]
		s.Cycles++
		s.Acked += c.Acked
		s.Lost += c.Lost
		s.Holes += c.Holes
		s.Partial += c.Partial
		s.InDoubt += c.InDoubt
		s.InDoubtPresent += c.InDoubtPresent
		s.EarlierMissing += c.EarlierMissing
		if c.Lost > s.MaxLostCycle {
			s.MaxLostCycle = c.Lost
		}
		if c.Check == "passed" {
			s.ChecksPassed++
		}
		if len(c.Failures()) > 0 {
			s.Failed++
		}
		if c.RestartErr == "" {
			rec[c.Preset] = append(rec[c.Preset], c.Recovery)
		}
	}
	for i := range out {
		r := rec[out[i].Preset]
		out[i].RecP50, out[i].RecP99, out[i].RecMax = Percentile(r, 50), Percentile(r, 99), Percentile(r, 100)
	}
	return out
}

// Line is the summary's text.
func (s Summary) Line() string {
	return fmt.Sprintf("%s: %d cycles, %d kills; %d New-Orders acknowledged, %d lost (at most %d in a cycle, %d out of order), %d partial; "+
		"in doubt %d (%d present); %d earlier orders gone; go-tpc check passed %d/%d; recovery p50 %.2f s, p99 %.2f s, max %.2f s; %d cycle(s) failed",
		s.Preset, s.Cycles, s.Cycles, s.Acked, s.Lost, s.MaxLostCycle, s.Holes, s.Partial, s.InDoubt, s.InDoubtPresent,
		s.EarlierMissing, s.ChecksPassed, s.Cycles, s.RecP50, s.RecP99, s.RecMax, s.Failed)
}

func (t *tester) write(took time.Duration) error {
	var rows [][]string
	for _, c := range t.cycles {
		rows = append(rows, []string{c.Preset, strconv.Itoa(c.N), fmt.Sprintf("%.1f", c.KillAt), strconv.Itoa(c.Acked),
			strconv.Itoa(c.Present), strconv.Itoa(c.Lost), strconv.Itoa(c.Holes), strconv.Itoa(c.Partial),
			strconv.Itoa(c.InDoubt), strconv.Itoa(c.InDoubtPresent), strconv.Itoa(c.Earlier), strconv.Itoa(c.EarlierMissing),
			strconv.Itoa(c.DriverErrors), c.Check, fmt.Sprintf("%.2f", c.Recovery), strings.Join(c.Failures(), "; ")})
	}
	if err := report.WriteCSV(filepath.Join(t.o.out, "cycles.csv"), []string{"preset", "cycle", "kill_s", "acked", "present",
		"lost", "holes", "partial", "in_doubt", "in_doubt_present", "earlier", "earlier_missing", "driver_errors", "check",
		"recovery_s", "failures"}, rows); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Crash under TPC-C (crashtpcc)\n\n")
	for _, l := range t.o.lines() {
		b.WriteString("- " + l + "\n")
	}
	fmt.Fprintf(&b, "- took %.0f s\n\n```\n%s\n", took.Seconds(), cycleHeader())
	for _, c := range t.cycles {
		b.WriteString(c.Line() + "\n")
	}
	b.WriteString("```\n\n")
	fmt.Println()
	for _, s := range Summarize(t.cycles) {
		fmt.Println("crashtpcc: " + s.Line())
		b.WriteString("- " + s.Line() + "\n")
	}
	return os.WriteFile(filepath.Join(t.o.out, "summary.md"), []byte(b.String()), 0o644)
}

// checkIndexes compares each secondary index's entry count with the
// table's rows, for the TPC-C tables that have secondary indexes.
func checkIndexes(ctx context.Context, db *sql.DB) string {
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT TABLE_NAME, INDEX_NAME FROM information_schema.STATISTICS "+
		"WHERE TABLE_SCHEMA = ? AND INDEX_NAME <> 'PRIMARY' ORDER BY 1, 2", dbName)
	if err != nil {
		return "index check: " + err.Error()
	}
	type ti struct{ t, i string }
	var l []ti
	for rows.Next() {
		var x ti
		if err := rows.Scan(&x.t, &x.i); err != nil {
			rows.Close()
			return "index check: " + err.Error()
		}
		l = append(l, x)
	}
	rows.Close()
	// The table's rows: a scan that ignores every secondary index (history
	// has no primary key).
	idx := map[string][]string{}
	for _, x := range l {
		idx[x.t] = append(idx[x.t], "`"+x.i+"`")
	}
	var bad []string
	count := map[string]int64{}
	for _, x := range l {
		n, ok := count[x.t]
		if !ok {
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+x.t+"` IGNORE INDEX ("+strings.Join(idx[x.t], ", ")+")").Scan(&n); err != nil {
				return "index check: " + err.Error()
			}
			count[x.t] = n
		}
		var m int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+x.t+"` FORCE INDEX (`"+x.i+"`)").Scan(&m); err != nil {
			return "index check: " + err.Error()
		}
		if m != n {
			bad = append(bad, fmt.Sprintf("%s: %d rows, %d entries in index %s", x.t, n, m, x.i))
		}
	}
	if len(bad) > 0 {
		return "index check: " + strings.Join(bad, "; ")
	}
	return ""
}
