// external.go is the TPC-C runner on an external, already running server
// (--target): none is started, configured or stopped. go-tpc builds the
// schema with --engine as default_storage_engine (its CREATE TABLE IF NOT
// EXISTS leaves tables that exist in place, so empty tables made
// beforehand, Spider tables say, are filled), or with --no-prepare the
// tables already loaded are used after checking their engine and
// warehouse count. The runs and checks are the same as on a server of
// tpcc's own; its settings, memory and data on disk are not measured.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"tidesql/bench/internal/report"
	"tidesql/bench/internal/target"
)

// external is the server measured with --target.
type external struct {
	t         target.Target
	engine    string // the tables' engine
	label     string // the server's name in the reports
	noPrepare bool
}

// serverFlags configure the servers tpcc starts: with --target it starts
// none, so giving one of them is a contradiction, refused.
var serverFlags = []string{"engines", "check-engines", "builds", "malloc", "durability", "memory", "cache", "compression", "mem-limit", "rocksdb-mem-limit", "cnf",
	"server-dir", "port"}

var engineName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// parseExternal reads --target, --engine, --label and --no-prepare; given
// holds the flags set on the command line.
func parseExternal(tgt, engine, label string, noPrepare bool, given map[string]bool) (*external, error) {
	if strings.TrimSpace(tgt) == "" {
		for _, f := range []string{"engine", "label", "no-prepare"} {
			if given[f] {
				return nil, fmt.Errorf("--%s is for an external server: give --target host:port too (without it, --engines names the engines of the servers tpcc starts)", f)
			}
		}
		return nil, nil
	}
	for _, f := range serverFlags {
		if given[f] {
			return nil, fmt.Errorf("--target with --%s: --%s is for the servers tpcc starts, and with --target it starts, configures and stops none (set the external server up yourself; --engine names its tables' engine)", f, f)
		}
	}
	t, err := target.Parse(tgt)
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	if !t.TCP() {
		return nil, fmt.Errorf("--target %q: go-tpc connects over TCP only: give host:port", tgt)
	}
	if engine == "" {
		return nil, fmt.Errorf("--target needs --engine: the engine go-tpc creates the tables with (with --no-prepare, the engine they use)")
	}
	if !engineName.MatchString(engine) {
		return nil, fmt.Errorf("--engine %q is not an engine name", engine)
	}
	if label = strings.TrimSpace(label); label == "" {
		label = engine + " (external)"
	}
	return &external{t: t, engine: engine, label: label, noPrepare: noPrepare}, nil
}

func (o options) externalLines() []string {
	tables := fmt.Sprintf("schema built by go-tpc with %d users, default_storage_engine=%s", o.buildVU, o.ext.engine)
	if o.ext.noPrepare {
		tables = "existing tables used as they are (--no-prepare), engine " + o.ext.engine
	}
	check := "go-tpc's consistency check after each run"
	if o.noCheck {
		check = "no consistency check (--no-check)"
	}
	return []string{
		fmt.Sprintf("size preset: %s; %d warehouses; %d users run %.2f min after a %.2f min ramp-up (discarded); %d s settle; %d iteration(s); go-tpc isolation %s; %s",
			o.sizeName, o.warehouses, o.runVU, o.duration, o.rampup, o.settle, o.iterations, o.preset.Isolation, check),
		"server: external server " + o.ext.t.String() + ", reported as \"" + o.ext.label + "\"; " + tables,
		"server settings, plugin build, allocator, memory limit and data on disk: not set or measured by tpcc (external server)",
	}
}

// extServer is the external server as measure sees it.
type extServer struct{ t target.Target }

func (e extServer) Open(db string) (*sql.DB, error) { return e.t.Open(db) }

// Why adds whether the server still answers (its error log is not ours).
func (e extServer) Why(err error) error {
	if err == nil {
		return nil
	}
	if perr := e.t.Ping(context.Background()); perr != nil {
		return fmt.Errorf("%w\n%v", err, perr)
	}
	return err
}

func (e extServer) Alive() bool { return e.t.Ping(context.Background()) == nil }

// external measures the external server: iterations first..first+count-1.
func (rn *runner) external(ctx context.Context, first, count int) error {
	o, x := rn.o, rn.o.ext
	rn.Note(x.t.Describe(ctx))
	s := extServer{x.t}
	g := GoTPC{Path: o.gotpc, Host: x.t.Host, Port: x.t.Port, User: x.t.User, Pass: x.t.Password, DB: dbName,
		Warehouses: o.warehouses, Engine: x.engine, Isolation: 2}
	db, err := x.t.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	if x.noPrepare {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+dbName+"`.warehouse").Scan(&n); err != nil {
			return fmt.Errorf("%s (--no-prepare): reading %s.warehouse: %w", x.label, dbName, err)
		}
		if n != o.warehouses {
			return fmt.Errorf("%s (--no-prepare): %s.warehouse holds %d warehouses, --warehouses says %d", x.label, dbName, n, o.warehouses)
		}
	} else {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+dbName+"`"); err != nil {
			return fmt.Errorf("%s: creating database %s: %w", x.label, dbName, err)
		}
		// go-tpc fills tables that exist: rows already there would clash.
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'warehouse'",
			dbName).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			var rows int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+dbName+"`.warehouse").Scan(&rows); err != nil {
				return err
			}
			if rows > 0 {
				return fmt.Errorf("%s: %s.warehouse already holds %d rows: drop database %s, or --no-prepare to measure the tables as they are",
					x.label, dbName, rows, dbName)
			}
		}
	}
	return rn.measure(ctx, serverJob{engine: x.label, what: x.label, file: report.Slug(x.label), first: first, count: count, g: g, srv: s,
		dataBytes: func() int64 { return 0 }, noPrepare: x.noPrepare})
}
