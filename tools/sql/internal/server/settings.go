package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Setting is one server variable whose value differs from the default.
type Setting struct {
	Engine   string `json:"engine"` // engine whose server reported it
	Variable string `json:"variable"`
	Default  string `json:"default"`
	Value    string `json:"value"`
}

// Variables that always differ between two servers (paths, ports, ids)
// and say nothing about how the engines were configured.
var volatileVars = map[string]bool{
	"datadir": true, "socket": true, "port": true, "pid_file": true, "log_error": true, "plugin_dir": true,
	"general_log_file": true, "slow_query_log_file": true, "hostname": true, "tmpdir": true,
	"server_uuid": true, "log_bin_basename": true, "log_bin_index": true, "relay_log_basename": true,
	"relay_log_index": true, "wsrep_data_home_dir": true, "innodb_data_home_dir": true,
	"innodb_log_group_home_dir": true, "aria_log_dir_path": true, "rocksdb_datadir": true,
	"plugin_maturity": true, "bind_address": true, "skip_name_resolve": true, "gtid_domain_id": true,
	"log_basename": true, "rocksdb_git_hash": true, "innodb_version": true, "system_time_zone": true,
	"version": true, "last_insert_id": true, "timestamp": true, "rand_seed1": true, "rand_seed2": true,
	"pseudo_thread_id": true, "tidesdb_debug_crash_point": true, "innodb_buffer_pool_filename": true,
}

// Settings lists every global variable of the running server that differs
// from what the same server with the same plugins and no configuration
// reports. The defaults are read once per server version and plugin set
// from a bare server and cached under build/sql/.
func (s *Server) Settings(ctx context.Context) ([]Setting, error) {
	cur, err := s.globalVariables(ctx)
	if err != nil {
		return nil, err
	}
	def, err := s.env.defaults(ctx, s.opt.Engines)
	if err != nil {
		return nil, err
	}
	engine := strings.Join(s.opt.Engines, "+")
	if engine == "" {
		engine = "InnoDB"
	}
	var out []Setting
	for _, k := range sortedKeys(cur) {
		if volatileVars[k] || strings.Contains(cur[k], s.opt.Dir) {
			continue
		}
		d, ok := def[k]
		if ok && d == cur[k] {
			continue
		}
		out = append(out, Setting{Engine: engine, Variable: k, Default: d, Value: cur[k]})
	}
	return out, nil
}

func (s *Server) globalVariables(ctx context.Context) (map[string]string, error) {
	db, err := s.Open("")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		m[strings.ToLower(k)] = v
	}
	return m, rows.Err()
}

// defaults returns the variables of a bare server with the plugins loaded.
func (e Env) defaults(ctx context.Context, engines []string) (map[string]string, error) {
	h := sha1.New()
	io.WriteString(h, PinnedVersion)
	for _, en := range engines {
		io.WriteString(h, en)
		so := map[string]string{"TidesDB": "ha_tidesdb.so", "RocksDB": "ha_rocksdb.so"}[en]
		if so != "" {
			if st, err := os.Stat(filepath.Join(e.PluginDir, so)); err == nil {
				fmt.Fprintf(h, "%d-%d", st.Size(), st.ModTime().UnixNano())
			}
		}
	}
	cache := filepath.Join(e.Root, "build", "sql", "defaults-"+hex.EncodeToString(h.Sum(nil))[:12]+".json")
	if b, err := os.ReadFile(cache); err == nil {
		m := map[string]string{}
		if json.Unmarshal(b, &m) == nil && len(m) > 0 {
			return m, nil
		}
	}
	dir, err := os.MkdirTemp(filepath.Join(e.Root, "build"), "sql-defaults-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := DefaultPreset()
	p.Memory = Seed
	bare, err := Start(ctx, e, Options{Dir: dir, Port: 3390, Preset: p, Engines: engines, Fresh: true, bare: true})
	if err != nil {
		return nil, fmt.Errorf("reading the default settings: %w", err)
	}
	m, err := bare.globalVariables(ctx)
	_ = bare.Stop()
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(m)
	_ = os.MkdirAll(filepath.Dir(cache), 0o755)
	_ = os.WriteFile(cache, b, 0o644)
	return m, nil
}

// WriteSettings writes settings as CSV (engine,variable,default,value).
func WriteSettings(path string, l []Setting) error {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Variable != l[j].Variable {
			return l[i].Variable < l[j].Variable
		}
		return l[i].Engine < l[j].Engine
	})
	var b strings.Builder
	b.WriteString("engine,variable,default,value\n")
	for _, s := range l {
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", csvField(s.Engine), csvField(s.Variable), csvField(s.Default), csvField(s.Value))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
