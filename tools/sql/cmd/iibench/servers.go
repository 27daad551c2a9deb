// servers.go is iibench's --server mode: one throw-away server at a
// time, (re)started whenever the next task's engine differs from the
// running server's, in one server directory whose data directory is kept
// across engines (wiped once, at the first start), so a mixed task finds
// the table its load task made. Each start drops the page cache first
// (noted when not permitted); the database and the dsn's user are made
// as needed, and each task's dsn is pointed at the server's socket.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"tidesql/bench/internal/server"
)

// serverMgr runs the servers of a --server run.
type serverMgr struct {
	env    server.Env
	preset server.Preset
	cnf    string // user my.cnf (optional)
	malloc string // allocator (server.Allocators)
	dir    string // server directory
	port   int

	cur       *server.Server
	curEngine string
	started   bool

	Notes      []string          // drop-caches notes and the like
	MemoryNote map[string]string // per engine
	Peak       map[string]int64  // peak memory per engine (cgroup), bytes
	MallocNote map[string]string // per engine: the allocator checked in the server
	Build      map[string]string // per engine: tidesdb_build where TidesDB is loaded
	Settings   []server.Setting
}

func newServerMgr(env server.Env, p server.Preset, cnf, malloc, dir string, port int) *serverMgr {
	return &serverMgr{env: env, preset: p, cnf: cnf, malloc: malloc, dir: dir, port: port,
		MemoryNote: map[string]string{}, Peak: map[string]int64{}, MallocNote: map[string]string{}, Build: map[string]string{}}
}

func plugins(engine string) []string {
	if engine == "InnoDB" {
		return nil
	}
	return []string{engine}
}

// Ensure makes the running server the one for engine.
func (m *serverMgr) Ensure(ctx context.Context, engine string) error {
	if m.cur != nil && m.curEngine == engine && m.cur.Alive() {
		return nil
	}
	if err := m.Stop(); err != nil {
		m.Notes = append(m.Notes, "stopping the "+m.curEngine+" server: "+err.Error())
	}
	if err := server.DropCaches(); err != nil {
		note := "page cache not dropped before the servers started (" + err.Error() + ")"
		if !contains(m.Notes, note) {
			m.Notes = append(m.Notes, note)
		}
	}
	s, err := server.Start(ctx, m.env, server.Options{Dir: m.dir, Port: m.port, Preset: m.preset,
		Engines: plugins(engine), CnfFile: m.cnf, Fresh: !m.started, Malloc: m.malloc})
	if err != nil {
		return fmt.Errorf("starting the %s server: %w", engine, err)
	}
	m.cur, m.curEngine, m.started = s, engine, true
	m.MemoryNote[engine] = s.MemoryNote
	m.MallocNote[engine] = s.MallocNote()
	if engine == "TidesDB" {
		m.Build[engine] = s.TidesDBBuild(ctx)
	}
	if set, err := s.Settings(ctx); err == nil {
		m.Settings = append(append(m.Settings, set...), s.MallocSettings(engine)...)
	} else {
		m.Notes = append(m.Notes, "settings of the "+engine+" server not read: "+err.Error())
	}
	return nil
}

// Stop stops the running server, keeping its peak memory.
func (m *serverMgr) Stop() error {
	if m.cur == nil {
		return nil
	}
	if p := m.cur.PeakMemory(); p > m.Peak[m.curEngine] {
		m.Peak[m.curEngine] = p
	}
	err := m.cur.Stop()
	m.cur = nil
	return err
}

// DiskBytes is the running engine's data on disk.
func (m *serverMgr) DiskBytes(engine, schema string) int64 {
	if m.cur == nil {
		return 0
	}
	return m.cur.EngineDataBytes(engine, schema)
}

// Alive reports whether the server still runs (a crashed engine ends the run).
func (m *serverMgr) Alive() bool { return m.cur != nil && m.cur.Alive() }

// DeathNote says why the server is gone (server.DeathNote).
func (m *serverMgr) DeathNote() string {
	if m.cur == nil {
		return "no server"
	}
	return m.cur.DeathNote()
}

// LogTail is the end of the running server's error log.
func (m *serverMgr) LogTail(n int) string {
	if m.cur == nil {
		return ""
	}
	return m.cur.LogTail(n)
}

// Prepare makes the database and user of a task's dsn on the running
// server and returns the dsn pointed at its socket.
func (m *serverMgr) Prepare(ctx context.Context, dsn string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	root, err := m.cur.Open("")
	if err != nil {
		return "", err
	}
	defer root.Close()
	stmts := []string{"CREATE DATABASE IF NOT EXISTS `" + cfg.DBName + "`"}
	if cfg.User != "" && cfg.User != "root" {
		acct := sqlString(cfg.User) + "@'localhost'"
		stmts = append(stmts,
			"CREATE USER IF NOT EXISTS "+acct+" IDENTIFIED BY "+sqlString(cfg.Passwd),
			"ALTER USER "+acct+" IDENTIFIED BY "+sqlString(cfg.Passwd),
			"GRANT ALL PRIVILEGES ON `"+cfg.DBName+"`.* TO "+acct)
	}
	for _, q := range stmts {
		if _, err := root.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("preparing the server for dsn %q: %s: %w", dsn, q, err)
		}
	}
	return withSocket(dsn, m.cur.Socket)
}

// withSocket points a dsn at a Unix socket.
func withSocket(dsn, socket string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	cfg.Net, cfg.Addr = "unix", socket
	return cfg.FormatDSN(), nil
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// openDSN opens a pool and checks that the server answers.
func openDSN(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
