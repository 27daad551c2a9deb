// variants.go: build variants of the TPC-C runner. A variant is a build
// of the TidesDB plugin (--builds: plain, pgo, lto, pgo-lto or name=DIR,
// each a plugin directory) run under an allocator (--malloc: glibc,
// jemalloc, mimalloc, tcmalloc); the variants are the cross product,
// builds outer. With more than one, the runner alternates them across the
// iterations (iteration 1 runs every variant in order, then iteration 2,
// ...), each (iteration, variant, engine) on a fresh server with a freshly
// built schema, so neither drift over the run nor a warm schema favours
// one variant; it reports per variant and engine the mean of NOPM, TPM and
// New-Order p99 over the iterations with their spread (min..max, relative
// standard deviation) and the ratio to the first variant of the engine.
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

// Build is one build of the plugin: a name and its plugin directory.
type Build struct {
	Name string
	// Dir is the plugin directory: relative to the repository root for a
	// named build, as given (relative to the working directory) for
	// name=DIR; "" for plain, which is the environment's (build/mariadb/
	// plugin, or TIDESQL_PLUGIN_DIR).
	Dir    string
	Custom bool // given as name=DIR
}

// namedBuilds are the builds scripts/mariadb/build_plugin.sh makes: their
// plugin directories (under the repository root) and how to make them.
var namedBuilds = map[string]struct{ dir, cmd string }{
	"plain":   {"build/mariadb/plugin", "scripts/mariadb/build_plugin.sh"},
	"pgo":     {"build/mariadb-pgo/plugin", "scripts/mariadb/build_plugin.sh --pgo"},
	"lto":     {"build/mariadb-lto/plugin", "scripts/mariadb/build_plugin.sh --lto"},
	"pgo-lto": {"build/mariadb-pgo-lto/plugin", "scripts/mariadb/build_plugin.sh --pgo --lto"},
}

var buildNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}$`)

// parseBuilds reads --builds: a comma- or space-separated list of build
// names (plain, pgo, lto, pgo-lto; pgo+lto is pgo-lto) or name=DIR, each
// name once.
func parseBuilds(list string) ([]Build, error) {
	var out []Build
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		var b Build
		if name, dir, ok := strings.Cut(f, "="); ok {
			if !buildNameRE.MatchString(name) {
				return nil, fmt.Errorf("--builds: %q: a build name is letters, digits, _ . + - (at most 40)", name)
			}
			if dir == "" {
				return nil, fmt.Errorf("--builds: %q: no directory after =", f)
			}
			b = Build{Name: name, Dir: dir, Custom: true}
		} else {
			name := strings.ToLower(f)
			if name == "pgo+lto" || name == "lto-pgo" || name == "lto+pgo" {
				name = "pgo-lto"
			}
			nb, ok := namedBuilds[name]
			if !ok {
				return nil, fmt.Errorf("--builds: unknown build %q (want plain, pgo, lto, pgo-lto, or name=DIR for a plugin directory of your own)", f)
			}
			b = Build{Name: name, Dir: nb.dir}
			if name == "plain" {
				b.Dir = ""
			}
		}
		for _, x := range out {
			if x.Name == b.Name {
				return nil, fmt.Errorf("--builds: build %s given twice", b.Name)
			}
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--builds: no build given (want plain, pgo, lto, pgo-lto or name=DIR)")
	}
	return out, nil
}

// PluginDir is the build's plugin directory on this machine.
func (b Build) PluginDir(env server.Env) string {
	switch {
	case b.Dir == "":
		return env.PluginDir
	case b.Custom:
		abs, err := filepath.Abs(b.Dir)
		if err != nil {
			return b.Dir
		}
		return abs
	}
	return filepath.Join(env.Root, b.Dir)
}

// Describe is the build for the run's description.
func (b Build) Describe() string {
	switch {
	case b.Dir == "" && os.Getenv("TIDESQL_PLUGIN_DIR") != "":
		return b.Name + " (" + os.Getenv("TIDESQL_PLUGIN_DIR") + ", TIDESQL_PLUGIN_DIR)"
	case b.Dir == "":
		return b.Name + " (" + namedBuilds["plain"].dir + ")"
	}
	return b.Name + " (" + b.Dir + ")"
}

// Check fails with the command that makes the build when its plugin
// directory or the engines' plugins in it are missing.
func (b Build) Check(env server.Env, engines []string) error {
	dir := b.PluginDir(env)
	hint := "give name=DIR for a directory holding ha_tidesdb.so and the server's plugins"
	if nb, ok := namedBuilds[b.Name]; ok && !b.Custom {
		hint = "build it with " + nb.cmd
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("build %s: plugin directory %s not found: %s", b.Name, dir, hint)
	}
	if contains(engines, "TidesDB") {
		if _, err := os.Stat(filepath.Join(dir, "ha_tidesdb.so")); err != nil {
			return fmt.Errorf("build %s: plugin ha_tidesdb.so not found in %s: %s", b.Name, dir, hint)
		}
	}
	e := env
	e.PluginDir = dir
	if err := e.CheckEngines(harness.Plugins(engines)); err != nil {
		return fmt.Errorf("build %s: %w", b.Name, err)
	}
	return nil
}

// Variant is a build under an allocator.
type Variant struct {
	Build  Build
	Malloc string
}

// Name is "build/allocator".
func (v Variant) Name() string { return v.Build.Name + "/" + v.Malloc }

// File is the variant in file names.
func (v Variant) File() string { return v.Build.Name + "_" + v.Malloc }

// crossVariants are builds x allocators, builds outer.
func crossVariants(builds []Build, mallocs []string) []Variant {
	var out []Variant
	for _, b := range builds {
		for _, m := range mallocs {
			out = append(out, Variant{Build: b, Malloc: m})
		}
	}
	return out
}

// job is one (iteration, variant, engine): a fresh server, a fresh schema,
// one measured run and its check.
type job struct {
	Iteration int // 1-based
	Variant   int // index into the variants
	Engine    string
}

// schedule alternates the variants across the iterations: iteration 1
// runs every variant in order (each with every engine in order), then
// iteration 2, and so on.
func schedule(iterations, variants int, engines []string) []job {
	var out []job
	for it := 1; it <= iterations; it++ {
		for v := 0; v < variants; v++ {
			for _, e := range engines {
				out = append(out, job{Iteration: it, Variant: v, Engine: e})
			}
		}
	}
	return out
}

// Stat is a figure over the iterations.
type Stat struct {
	N              int
	Mean, Min, Max float64
	RSD            float64 // sample standard deviation / mean, percent (0 with one value)
}

// summarize is the mean, min, max and relative sample standard deviation
// of vals (N = 0: no values).
func summarize(vals []float64) Stat {
	s := Stat{N: len(vals)}
	if s.N == 0 {
		return s
	}
	s.Min, s.Max = vals[0], vals[0]
	var sum float64
	for _, v := range vals {
		sum += v
		s.Min = math.Min(s.Min, v)
		s.Max = math.Max(s.Max, v)
	}
	s.Mean = sum / float64(s.N)
	if s.N > 1 && s.Mean != 0 {
		var ss float64
		for _, v := range vals {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.RSD = 100 * math.Sqrt(ss/float64(s.N-1)) / math.Abs(s.Mean)
	}
	return s
}

// Format is "mean (min..max, ±rsd%)"; the mean alone for one value,
// "failed" for none.
func (s Stat) Format(format string) string {
	switch s.N {
	case 0:
		return "failed"
	case 1:
		return fmt.Sprintf(format, s.Mean)
	}
	return fmt.Sprintf(format+" ("+format+".."+format+", ±%.1f%%)", s.Mean, s.Min, s.Max, s.RSD)
}

// ratio is a/b as "1.23x" ("-" when either has no value).
func ratio(a, b Stat) string {
	if a.N == 0 || b.N == 0 || b.Mean == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a.Mean/b.Mean)
}

// variantFigures is one variant and engine over the iterations.
type variantFigures struct {
	Variant        Variant
	Engine         string
	Build          string // tidesdb_build reported by the servers ("-" off TidesDB)
	Runs, OK       int
	NOPM, TPM, P99 Stat
}

// aggregate gives the figures of every variant and engine, variants
// outer, from the successful runs.
func aggregate(variants []Variant, engines []string, rs []Result) []variantFigures {
	var out []variantFigures
	for vi, v := range variants {
		for _, e := range engines {
			f := variantFigures{Variant: v, Engine: e, Build: "-"}
			var nopm, tpm, p99 []float64
			var builds []string
			for _, r := range rs {
				if r.Variant != vi || r.Engine != e {
					continue
				}
				f.Runs++
				if r.TidesDBBuild != "" && !contains(builds, r.TidesDBBuild) {
					builds = append(builds, r.TidesDBBuild)
				}
				if r.Err != "" {
					continue
				}
				f.OK++
				nopm = append(nopm, r.Out.TPMC)
				tpm = append(tpm, r.Out.TPMTotal)
				p99 = append(p99, r.Out.Txn["NEW_ORDER"].P99)
			}
			if len(builds) > 0 {
				f.Build = strings.Join(builds, ", ")
			}
			f.NOPM, f.TPM, f.P99 = summarize(nopm), summarize(tpm), summarize(p99)
			out = append(out, f)
		}
	}
	return out
}

// contains reports whether l holds s.
func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// firstOf is the figures of the first variant for engine.
func firstOf(fs []variantFigures, engine string) variantFigures {
	for _, f := range fs {
		if f.Engine == engine {
			return f
		}
	}
	return variantFigures{}
}

var variantHeader = []string{"variant", "build", "plugin_dir", "malloc", "engine", "tidesdb_build", "runs", "ok",
	"nopm_mean", "nopm_min", "nopm_max", "nopm_rsd_pct", "tpm_mean", "tpm_min", "tpm_max", "tpm_rsd_pct",
	"new_order_p99_mean_ms", "new_order_p99_min_ms", "new_order_p99_max_ms", "new_order_p99_rsd_pct",
	"nopm_vs_first", "tpm_vs_first", "new_order_p99_vs_first"}

// variantCSV are the rows of variants.csv.
func variantCSV(env server.Env, fs []variantFigures) [][]string {
	num := func(s Stat, v float64) string {
		if s.N == 0 {
			return ""
		}
		return f2(v)
	}
	stat := func(s Stat) []string {
		rsd := num(s, s.RSD)
		if s.N < 2 {
			rsd = "" // no spread from one value
		}
		return []string{num(s, s.Mean), num(s, s.Min), num(s, s.Max), rsd}
	}
	rat := func(a, b Stat) string {
		if a.N == 0 || b.N == 0 || b.Mean == 0 {
			return ""
		}
		return strconv.FormatFloat(a.Mean/b.Mean, 'f', 3, 64)
	}
	var rows [][]string
	for _, f := range fs {
		first := firstOf(fs, f.Engine)
		row := []string{f.Variant.Name(), f.Variant.Build.Name, f.Variant.Build.PluginDir(env), f.Variant.Malloc,
			f.Engine, f.Build, strconv.Itoa(f.Runs), strconv.Itoa(f.OK)}
		row = append(append(append(row, stat(f.NOPM)...), stat(f.TPM)...), stat(f.P99)...)
		row = append(row, rat(f.NOPM, first.NOPM), rat(f.TPM, first.TPM), rat(f.P99, first.P99))
		rows = append(rows, row)
	}
	return rows
}

// variantTable is the Markdown/terminal table of the variants.
func variantTable(fs []variantFigures) report.Table {
	t := report.Table{Header: []string{"variant", "engine", "tidesdb_build", "runs ok", "NOPM", "TPM", "New-Order p99 (ms)",
		"NOPM vs first", "TPM vs first", "p99 vs first"}}
	for _, f := range fs {
		first := firstOf(fs, f.Engine)
		t.Rows = append(t.Rows, []string{f.Variant.Name(), report.EngineLabel(f.Engine), f.Build,
			fmt.Sprintf("%d/%d", f.OK, f.Runs), f.NOPM.Format("%.0f"), f.TPM.Format("%.0f"), f.P99.Format("%.2f"),
			ratio(f.NOPM, first.NOPM), ratio(f.TPM, first.TPM), ratio(f.P99, first.P99)})
	}
	return t
}

// variantMarkdown is summary.md of a run of several variants.
func variantMarkdown(o options, stamp string, rs []Result, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# tpcc %s: build variants\n\n", stamp)
	b.WriteString(report.Settings(o.Lines(), notes))
	b.WriteString("\nPer variant and engine over the iterations: mean (min..max, ±relative sample standard deviation); " +
		"\"vs first\" is the mean divided by the first variant's for the same engine (throughput: above 1.00x is better; " +
		"p99: below 1.00x is better).")
	if contains(o.engines, "InnoDB") {
		b.WriteString(" InnoDB does not load the TidesDB plugin: across builds it is the control for drift.")
	}
	b.WriteString("\n\n")
	b.WriteString(variantTable(aggregate(o.variants, o.engines, rs)).Markdown())
	var fails []string
	for _, r := range rs {
		if r.Err != "" {
			fails = append(fails, fmt.Sprintf("- %s %s iteration %d: %s", o.variants[r.Variant].Name(),
				report.EngineLabel(r.Engine), r.Iteration, report.FirstLine(r.Err)))
		}
	}
	if len(fails) > 0 {
		b.WriteString("\n## Failed runs\n\n" + strings.Join(fails, "\n") + "\n")
	}
	return b.String()
}
