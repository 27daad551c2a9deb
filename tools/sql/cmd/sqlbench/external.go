// external.go is sqlbench on an external, already running server
// (TARGET): no server is started, configured or stopped; sysbench creates
// its tables with ENGINE (or, with NO_PREPARE, the tables already there
// are checked and used), and the same workload loop measures it. What only
// a server of sqlbench's own gives (settings dump, allocator, memory peak,
// data on disk) is not measured.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tidesql/bench/internal/progress"
	"tidesql/bench/internal/report"
	"tidesql/bench/internal/target"
)

// serverKeys configure the servers sqlbench starts: with TARGET it starts
// none, so giving one of them is a contradiction, refused.
var serverKeys = []string{"ENGINES", "DURABILITY", "MEMORY", "MEM_LIMIT", "TIDESDB_SYNC_MODE", "TIDESDB_COMPRESSION",
	"INNODB_COMPRESSION", "ROCKSDB_COMPRESSION", "TIDESDB_BLOCK_CACHE", "INNODB_BUFFER_POOL", "ROCKSDB_BLOCK_CACHE",
	"INNODB_FLUSH", "ROCKSDB_FLUSH", "MALLOC", "CNF", "SERVER_DIR", "PORT", "ROCKSDB_MEM_LIMIT"}

var engineName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// loadExternal reads TARGET, ENGINE, LABEL and NO_PREPARE into c.
func loadExternal(c *Config, getenv func(string) string) error {
	tv := strings.TrimSpace(getenv("TARGET"))
	if tv == "" {
		for _, k := range []string{"ENGINE", "LABEL", "NO_PREPARE"} {
			if strings.TrimSpace(getenv(k)) != "" {
				return fmt.Errorf("%s is for an external server: give TARGET=host:port too (without TARGET, ENGINES names the engines of the servers sqlbench starts)", k)
			}
		}
		return nil
	}
	for _, k := range serverKeys {
		if strings.TrimSpace(getenv(k)) != "" {
			return fmt.Errorf("TARGET with %s: %s is for the servers sqlbench starts, and with TARGET it starts, configures and stops none (set the external server up yourself; ENGINE names its tables' engine)", k, k)
		}
	}
	t, err := target.Parse(tv)
	if err != nil {
		return fmt.Errorf("TARGET: %w", err)
	}
	c.External = &t
	c.TableEngine = strings.TrimSpace(getenv("ENGINE"))
	if c.TableEngine == "" {
		return fmt.Errorf("TARGET needs ENGINE: the engine sysbench creates the tables with (or, with NO_PREPARE=1, the engine they use)")
	}
	if !engineName.MatchString(c.TableEngine) {
		return fmt.Errorf("ENGINE=%q is not an engine name", c.TableEngine)
	}
	c.Label = strings.TrimSpace(getenv("LABEL"))
	if c.Label == "" {
		c.Label = c.TableEngine + " (external)"
	}
	if v := getenv("NO_PREPARE"); v != "" {
		if c.NoPrepare, err = boolValue("NO_PREPARE", v); err != nil {
			return err
		}
	}
	if c.NoPrepare && len(c.TableSizes) > 1 {
		return fmt.Errorf("NO_PREPARE=1 with TABLE_SIZES=%q: the existing tables have one size", joinInts(c.TableSizes))
	}
	c.Engines = []string{c.Label}
	return nil
}

// boolValue is a yes/no setting; anything else is refused.
func boolValue(key, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "yes", "true", "on":
		return true, nil
	case "0", "no", "false", "off":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want 1 or 0", key, v)
}

func (c Config) externalLines() []string {
	tables := "prepared by sqlbench with ENGINE=" + c.TableEngine
	if c.NoPrepare {
		tables = "existing tables used as they are (NO_PREPARE), engine " + c.TableEngine
	}
	return []string{
		fmt.Sprintf("size preset: %s; tables %d x %s rows; threads %s; %d s per run after %d s warm-up; %d iteration(s)",
			c.SizePreset, c.Tables, joinInts(c.TableSizes), joinInts(c.Threads), c.Time, c.Warmup, c.Iterations),
		"server: external server " + c.External.String() + ", reported as \"" + c.Label + "\"; " + tables,
		"workloads: " + strings.Join(c.Workloads, ", "),
		"server settings, allocator, memory limit and data on disk: not set or measured by sqlbench (external server)",
	}
}

// external measures the external server at one table size.
func (sw *sweep) external(ctx context.Context, size int) error {
	cfg := sw.cfg
	t := *cfg.External
	label := cfg.Label
	sw.Note(t.Describe(ctx))
	b := Bench{Path: cfg.Sysbench, Socket: t.Socket, Host: t.Host, Port: t.Port, User: t.User, Pass: t.Password,
		DB: schema, Engine: cfg.TableEngine, Tables: cfg.Tables, Size: size}
	db, err := t.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if cfg.NoPrepare {
		sw.tr.Step(fmt.Sprintf("%s: checking the %d existing tables of %d rows", label, cfg.Tables, size))
		for i := 1; i <= cfg.Tables; i++ {
			if err := tableIs(ctx, db, fmt.Sprintf("sbtest%d", i), cfg.TableEngine, size); err != nil {
				return fmt.Errorf("%s (NO_PREPARE): %w", label, err)
			}
		}
		sw.tr.Printf("%d tables of %d rows, engine %s", cfg.Tables, size, cfg.TableEngine)
	} else {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+schema+"`"); err != nil {
			return fmt.Errorf("%s: creating database %s: %w", label, schema, err)
		}
		for i := 1; i <= cfg.Tables; i++ {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
				schema, fmt.Sprintf("sbtest%d", i)).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%s: table %s.sbtest%d exists on the external server: drop it, or NO_PREPARE=1 to measure the tables as they are", label, schema, i)
			}
		}
		sw.tr.Step(fmt.Sprintf("%s: preparing %d tables of %d rows, ENGINE=%s", label, cfg.Tables, size, cfg.TableEngine))
		t0 := time.Now()
		if _, err := b.Prepare(ctx, filepath.Join(sw.raw, fmt.Sprintf("%s_prepare_%d.log", report.Slug(label), size))); err != nil {
			return fmt.Errorf("%s: preparing the tables: %w", label, why(ctx, t, err))
		}
		for i := 1; i <= cfg.Tables; i++ {
			if err := tableIs(ctx, db, fmt.Sprintf("sbtest%d", i), cfg.TableEngine, size); err != nil {
				return fmt.Errorf("%s: after sysbench prepare: %w", label, err)
			}
		}
		sw.tr.Done(time.Duration(10+cfg.Tables*size/40000) * time.Second)
		sw.tr.Printf("prepared in %s", progress.Round(time.Since(t0)))
	}
	err = sw.workloads(ctx, label, size, b, measured{dataBytes: func() int64 { return 0 },
		why: func(err error) error { return why(ctx, t, err) }, alive: func() bool { return t.Ping(ctx) == nil }})
	if err == nil && !cfg.NoPrepare && size != cfg.TableSizes[len(cfg.TableSizes)-1] && ctx.Err() == nil {
		// The next size prepares its own tables: drop the ones sqlbench made.
		if _, err := b.Cleanup(ctx, filepath.Join(sw.raw, fmt.Sprintf("%s_cleanup_%d.log", report.Slug(label), size))); err != nil {
			return fmt.Errorf("%s: dropping the tables of %d rows: %w", label, size, err)
		}
	}
	return err
}

// why explains a failure against an external server: whether it still
// answers (its error log is not ours to read).
func why(ctx context.Context, t target.Target, err error) error {
	if err == nil {
		return nil
	}
	if perr := t.Ping(ctx); perr != nil {
		return fmt.Errorf("%w\n%v", err, perr)
	}
	return err
}

// tableIs checks that schema.name uses engine and holds rows rows.
func tableIs(ctx context.Context, db *sql.DB, name, engine string, rows int) error {
	var e sql.NullString
	err := db.QueryRowContext(ctx, "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		schema, name).Scan(&e)
	if err == sql.ErrNoRows {
		return fmt.Errorf("no table %s.%s", schema, name)
	}
	if err != nil {
		return err
	}
	if !strings.EqualFold(e.String, engine) {
		return fmt.Errorf("table %s.%s uses engine %s, not ENGINE=%s", schema, name, e.String, engine)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+schema+"`.`"+name+"`").Scan(&n); err != nil {
		return fmt.Errorf("counting %s.%s: %w", schema, name, err)
	}
	if n != int64(rows) {
		return fmt.Errorf("table %s.%s holds %d rows, TABLE_SIZES says %s", schema, name, n, strconv.Itoa(rows))
	}
	return nil
}
