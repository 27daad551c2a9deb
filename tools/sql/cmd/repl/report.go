// report.go: cycles.csv and summary.md in the output directory.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func (t *tester) write(total time.Duration) error {
	var csv strings.Builder
	csv.WriteString("cycle,kill_s,acked,in_doubt,in_doubt_present,failed,lost,phantoms,prepared_at_recovery,binlog_only,engine_only,recovery_s,catchup_s,tables,rows,mismatches\n")
	for _, c := range t.cycles {
		fmt.Fprintf(&csv, "%d,%.1f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.2f,%.2f,%d,%d,%d\n", c.N, c.KillAt, c.Acked, c.InDoubt,
			c.InDoubtPresent, c.Failed, c.Lost, c.Phantoms, c.Prepared, c.BinlogOnly, c.EngineOnly, c.Recovery, c.Catchup,
			c.Tables, c.Rows, c.Mismatches)
	}
	if err := os.WriteFile(filepath.Join(t.o.out, "cycles.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Replication over TidesDB: steady load and kill -9 of the primary\n\n")
	for _, l := range t.o.lines() {
		b.WriteString("- " + l + "\n")
	}
	fmt.Fprintf(&b, "- total %.0f s\n\n", total.Seconds())
	for _, n := range t.notes {
		b.WriteString("- " + n + "\n")
	}
	if len(t.cycles) > 0 {
		var acked, doubt, doubtP, lost, mism, bo, eo, prep int
		var rec, cu []float64
		for _, c := range t.cycles {
			acked += c.Acked
			doubt += c.InDoubt
			doubtP += c.InDoubtPresent
			lost += c.Lost + c.Phantoms
			mism += c.Mismatches
			bo += c.BinlogOnly
			eo += c.EngineOnly
			prep += c.Prepared
			rec = append(rec, c.Recovery)
			cu = append(cu, c.Catchup)
		}
		survived := 0
		for _, c := range t.cycles {
			if len(c.Problems) == 0 {
				survived++
			}
		}
		fmt.Fprintf(&b, "\n## Crash cycles\n\n%d of %d cycles passed every check. %d transactions acknowledged, %d lost or phantom; %d in doubt at the kill (%d of them committed); %d prepared transactions resolved by binlog recovery; engine vs binlog: %d binlog-only, %d engine-only; replica vs primary: %d table mismatches. Restart to ready %s s, replica caught up %s s after the restart (median/max).\n\n",
			survived, len(t.cycles), acked, lost, doubt, doubtP, prep, bo, eo, mism, medMax(rec), medMax(cu))
		b.WriteString("```\n" + cycleHeader() + "\n")
		for _, c := range t.cycles {
			b.WriteString(c.Line() + "\n")
		}
		b.WriteString("```\n")
	}
	if len(t.rcycles) > 0 {
		if err := os.WriteFile(filepath.Join(t.o.out, "replica_cycles.csv"), []byte(replicaCyclesCSV(t.rcycles)), 0o644); err != nil {
			return err
		}
		survived, mism, prep := 0, 0, 0
		for _, c := range t.rcycles {
			if len(c.Problems) == 0 {
				survived++
			}
			mism += c.Mismatches
			prep += c.Prepared
		}
		fmt.Fprintf(&b, "\n## Crash cycles of the replica\n\n%d of %d cycles passed every check (position not gone back, resumed without an apply error, tables equal to the primary's): %d table mismatches, %d prepared transactions resolved at its recoveries.\n\n```\n%s\n",
			survived, len(t.rcycles), mism, prep, replicaCycleHeader())
		for _, c := range t.rcycles {
			b.WriteString(c.Line() + "\n")
		}
		b.WriteString("```\n")
	}
	if len(t.problems) > 0 {
		b.WriteString("\n## Problems\n\n")
		for _, p := range t.problems {
			b.WriteString("- " + p + "\n")
		}
	}
	return os.WriteFile(filepath.Join(t.o.out, "summary.md"), []byte(b.String()), 0o644)
}

func medMax(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	s := append([]float64{}, v...)
	sort.Float64s(s)
	return fmt.Sprintf("%.2f/%.2f", s[len(s)/2], s[len(s)-1])
}
