// gotpc.go runs go-tpc (build/go-tpc/go-tpc) for the crash test: the
// schema load, a run in its own process group that is killed with the
// server, and the consistency check after each restart.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tidesql/bench/internal/gotpc"
	"tidesql/bench/internal/harness"
	"tidesql/bench/internal/report"
)

// GoTPC runs go-tpc against the server on 127.0.0.1:Port.
type GoTPC struct {
	Path       string
	Port       int
	DB         string
	Warehouses int
}

func (g GoTPC) args(threads int) []string {
	return []string{"tpcc", "-H", "127.0.0.1", "-P", strconv.Itoa(g.Port), "-U", "root", "-D", g.DB,
		"--warehouses", strconv.Itoa(g.Warehouses), "-T", strconv.Itoa(threads),
		"--conn-params", "default_storage_engine=TidesDB"}
}

// Prepare loads the schema and the data.
func (g GoTPC) Prepare(ctx context.Context, threads int, log string) error {
	out, err := harness.Exec(ctx, time.Duration(600+g.Warehouses*180)*time.Second, log, g.Path,
		append(g.args(threads), "prepare", "--no-check")...)
	if err == nil && gotpc.Fatal(out) {
		err = fmt.Errorf("go-tpc prepare failed:\n%s", report.Tail(out, 8))
	}
	return err
}

// Check runs go-tpc's consistency check; it returns the number of
// conditions checked, and the failed ones ("" = passed). go-tpc prints a
// failed condition and still exits 0.
func (g GoTPC) Check(ctx context.Context, threads int, log string) (int, string, error) {
	out, err := harness.Exec(ctx, time.Duration(300+g.Warehouses*60)*time.Second, log, g.Path, append(g.args(threads), "check")...)
	if err != nil {
		return 0, "", err
	}
	return gotpc.CheckedConditions(out), gotpc.CheckFailed(out), nil
}

// Load is a go-tpc run in the background.
type Load struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// StartRun starts the TPC-C mix (threads users, READ COMMITTED, errors
// retried) for at most d, its output in log.
func (g GoTPC) StartRun(threads int, d time.Duration, log string) (*Load, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	a := append(g.args(threads), "--time", d.String(), "--interval", "5s", "--isolation", "2", "--ignore-error", "run")
	fmt.Fprintf(f, "# %s %s\n", g.Path, strings.Join(a, " "))
	cmd := exec.Command(g.Path, a...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	l := &Load{cmd: cmd, done: make(chan struct{}), log: f}
	go func() { _ = cmd.Wait(); close(l.done) }()
	return l, nil
}

// Stop kills the run (its whole process group) and waits for it.
func (l *Load) Stop() {
	select {
	case <-l.done:
	default:
		_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		<-l.done
	}
	l.log.Close()
}

// Exited reports whether the run ended by itself (before the kill).
func (l *Load) Exited() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}
