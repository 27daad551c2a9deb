// Package harness is what the SQL benchmark commands share around their
// measurements: the start of a run (server environment, engine plugins,
// output directory, the configuration printed and kept), interrupts that
// stop every server after the results measured so far are written, and
// running an external driver (sysbench, go-tpc) with a deadline and a log.
package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/server"
)

// Run is one harness run.
type Run struct {
	Env      server.Env
	Out      string // output directory
	Stamp    string // report.Stamp of the start
	Ctx      context.Context
	cancel   context.CancelFunc
	finished chan struct{}
}

// Begin finds the server environment, checks the plugins of engines, makes
// out (default results/<name>-<stamp>), prints lines and keeps them in
// out/preset.txt, and arranges that an interrupt cancels Ctx, waits (up to
// a minute) for End, then stops every server and exits 130.
func Begin(name string, engines []string, out string, lines []string) (*Run, error) {
	return BeginWith(name, out, lines, func(env server.Env) error { return env.CheckEngines(Plugins(engines)) })
}

// Plugins are the engines among engines that load a plugin (not InnoDB).
func Plugins(engines []string) []string {
	var plugins []string
	for _, e := range engines {
		if e != "InnoDB" {
			plugins = append(plugins, e)
		}
	}
	return plugins
}

// BeginWith is Begin with the run's own check of the environment (the
// plugin directories of several builds, say) in place of Begin's.
func BeginWith(name, out string, lines []string, check func(server.Env) error) (*Run, error) {
	env, err := server.FindEnv()
	if err != nil {
		return nil, err
	}
	if err := check(env); err != nil {
		return nil, err
	}
	r := &Run{Env: env, Stamp: report.Stamp(time.Now()), Out: out, finished: make(chan struct{})}
	if r.Out == "" {
		r.Out = filepath.Join("results", name+"-"+r.Stamp)
	}
	if err := os.MkdirAll(r.Out, 0o755); err != nil {
		return nil, err
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	_ = os.WriteFile(filepath.Join(r.Out, "preset.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	r.Ctx, r.cancel = context.WithCancel(context.Background())
	server.HandleInterrupts(func() {
		r.cancel()
		select { // let the run write what it measured
		case <-r.finished:
		case <-time.After(time.Minute):
		}
	})
	return r, nil
}

// Interrupted reports whether the run was interrupted.
func (r *Run) Interrupted() bool { return r.Ctx.Err() != nil }

// End is called once the results are written; after an interrupt it
// blocks while the interrupt handler stops the servers and exits.
func (r *Run) End() {
	close(r.finished)
	if r.Interrupted() {
		select {}
	}
	r.cancel()
}

// Exec runs path with args under a deadline; log, when not "", keeps the
// command line and its output. The error quotes the output's last lines.
func Exec(ctx context.Context, timeout time.Duration, log, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = 10 * time.Second
	b, err := cmd.CombinedOutput()
	out := string(b)
	if log != "" {
		_ = os.WriteFile(log, []byte("# "+path+" "+strings.Join(args, " ")+"\n"+out), 0o644)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		return out, fmt.Errorf("%s: %v; its last lines:\n%s", filepath.Base(path), err, report.Tail(out, 8))
	}
	return out, nil
}

// Servers keeps what a run's servers leave for its results: the settings
// that differ from the server's defaults, each engine's memory note and
// peak, and notes (each once).
type Servers struct {
	Settings []server.Setting
	Notes    []string
	memNotes map[string]string
	peaks    map[string]int64
	mallocs  map[string][]string // per engine, each distinct note once
	builds   map[string][]string // per engine, tidesdb_build values
}

// Note adds a note unless it is already there.
func (sv *Servers) Note(s string) {
	for _, x := range sv.Notes {
		if x == s {
			return
		}
	}
	sv.Notes = append(sv.Notes, s)
}

// Started records a server that started.
func (sv *Servers) Started(r *server.Run) {
	if sv.memNotes == nil {
		sv.memNotes, sv.peaks = map[string]string{}, map[string]int64{}
		sv.mallocs, sv.builds = map[string][]string{}, map[string][]string{}
	}
	sv.memNotes[r.Engine] = r.MemoryNote
	sv.mallocs[r.Engine] = addOnce(sv.mallocs[r.Engine], r.MallocNote())
	if r.TidesDBBuild != "" {
		sv.builds[r.Engine] = addOnce(sv.builds[r.Engine], r.TidesDBBuild)
	}
	sv.Settings = append(sv.Settings, r.Settings...)
	for _, n := range r.Notes {
		sv.Note(n)
	}
}

// Stop stops a server, keeping its peak memory.
func (sv *Servers) Stop(r *server.Run) {
	if p := r.PeakMemory(); p > sv.peaks[r.Engine] {
		sv.peaks[r.Engine] = p
	}
	if err := r.Stop(); err != nil {
		sv.Note("stopping the " + r.Engine + " server: " + err.Error())
	}
}

// MemoryLines are "<engine> server: <how memory was limited>, peak <bytes>",
// in the order of engines.
func (sv *Servers) MemoryLines(engines []string) []string {
	var l []string
	for _, e := range engines {
		if n, ok := sv.memNotes[e]; ok {
			line := e + " server: " + n
			if p := sv.peaks[e]; p > 0 {
				line += ", peak " + server.FormatBytes(p)
			}
			l = append(l, line)
		}
	}
	return l
}

// BuildLines are "<engine> server: allocator <name> ...; tidesdb_build
// <flavour>", in the order of engines: what each server ran on, checked
// after its start (tidesdb_build only where TidesDB was loaded).
func (sv *Servers) BuildLines(engines []string) []string {
	var l []string
	for _, e := range engines {
		m, ok := sv.mallocs[e]
		if !ok {
			continue
		}
		line := e + " server: " + strings.Join(m, ", ")
		if b := sv.builds[e]; len(b) > 0 {
			line += "; tidesdb_build " + strings.Join(b, ", ")
		}
		l = append(l, line)
	}
	return l
}

// addOnce appends s to l unless l holds it.
func addOnce(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}
