// Package report writes what the SQL harnesses measured: CSV files,
// Markdown and plain-text tables, and PNG charts drawn by the Python
// scripts in tools/sql/plot/ (matplotlib).
package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Stamp is the run's timestamp in file names: 20261125_134501.
func Stamp(t time.Time) string { return t.Format("20060102_150405") }

// WriteCSV writes a header and rows.
func WriteCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.Write(header); err != nil {
		f.Close()
		return err
	}
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Table is a header and rows of text cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// Markdown renders the table as GitHub Markdown.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// Text renders the table with aligned columns for a terminal.
func (t Table) Text(w io.Writer) {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = len(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) && len(c) > width[i] {
				width[i] = len(c)
			}
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				io.WriteString(w, "  ")
			}
			if i == 0 {
				fmt.Fprintf(w, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(w, "%*s", width[i], c)
			}
		}
		io.WriteString(w, "\n")
	}
	line(t.Header)
	for _, r := range t.Rows {
		line(r)
	}
}

// Ratio prints a/b as "1.23x" ("-" when b is zero or either is missing).
func Ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// Python finds an interpreter with matplotlib: the repository's .venv
// (scripts/setup.sh makes it when the system has none), then the
// system's. "" when there is none.
func Python(root string) string {
	for _, c := range []string{filepath.Join(root, ".venv", "bin", "python"), "/usr/bin/python3", "python3"} {
		if exec.Command(c, "-c", "import matplotlib").Run() == nil {
			return c
		}
	}
	return ""
}

// Plot runs tools/sql/plot/<script> with args; charts are optional, so a
// missing matplotlib or a failed chart is reported, not fatal.
func Plot(root, script string, args ...string) error {
	py := Python(root)
	if py == "" {
		return fmt.Errorf("matplotlib is not available: charts skipped (run scripts/setup.sh)")
	}
	cmd := exec.Command(py, append([]string{filepath.Join(root, "tools", "sql", "plot", script)}, args...)...)
	cmd.Env = append(os.Environ(), "MPLBACKEND=Agg")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s failed: %v\n%s", script, err, out)
	}
	return nil
}

// EngineLabel is how results name an engine: RocksDB is MyRocks.
func EngineLabel(e string) string {
	if e == "RocksDB" {
		return "MyRocks"
	}
	return e
}

// Slug is s fit for a file name: every run of characters other than
// letters, digits, '.', '_' and '-' becomes one '_' ("TidesDB" stays).
func Slug(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return b.String()
}

// FirstLine of s (a long error's headline, for tables).
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// ReadCSV reads a CSV file with a header row into one map per row.
func ReadCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s: no header", path)
	}
	var out []map[string]string
	for _, r := range all[1:] {
		m := map[string]string{}
		for i, h := range all[0] {
			if i < len(r) {
				m[h] = r[i]
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// Settings is the bullet list every summary.md opens with: the run's
// settings, one per line, then its notes ("- note: ...").
func Settings(lines, notes []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("- " + l + "\n")
	}
	for _, n := range notes {
		b.WriteString("- note: " + n + "\n")
	}
	return b.String()
}
