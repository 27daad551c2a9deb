// Package target is an external, already running server that a harness
// measures without starting, configuring or stopping it (a Spider front,
// say, or a server someone else set up). The harness reaches it over TCP
// (host:port) or a Unix socket, as the user it is given; what it cannot
// know about such a server (its settings, memory peak, data on disk) is
// not measured, and the reports say "external server".
package target

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver behind sql.Open("mysql")
)

// Target is where an external server listens and whom to connect as.
type Target struct {
	Host     string // TCP host ("" with Socket)
	Port     int    // TCP port
	Socket   string // Unix socket path ("" with Host:Port)
	User     string // default root
	Password string
}

// Parse reads "host:port" or a socket path (starting with "/"), optionally
// followed by ",user=NAME" and ",password=SECRET" in any order.
func Parse(s string) (Target, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	t := Target{User: "root"}
	addr := parts[0]
	switch {
	case addr == "":
		return t, fmt.Errorf("target %q: want host:port or a socket path", s)
	case strings.HasPrefix(addr, "/"):
		t.Socket = addr
	default:
		i := strings.LastIndexByte(addr, ':')
		if i <= 0 {
			return t, fmt.Errorf("target %q: want host:port or a socket path (/...)", s)
		}
		p, err := strconv.Atoi(addr[i+1:])
		if err != nil || p < 1 || p > 65535 {
			return t, fmt.Errorf("target %q: port %q is not 1..65535", s, addr[i+1:])
		}
		t.Host, t.Port = addr[:i], p
	}
	seen := map[string]bool{}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || (k != "user" && k != "password") {
			return t, fmt.Errorf("target %q: %q: want user=NAME or password=SECRET after the address", s, kv)
		}
		if seen[k] {
			return t, fmt.Errorf("target %q: %s given twice", s, k)
		}
		seen[k] = true
		if k == "user" {
			if v == "" {
				return t, fmt.Errorf("target %q: empty user", s)
			}
			t.User = v
		} else {
			t.Password = v
		}
	}
	return t, nil
}

// TCP reports whether the target is reached over TCP (go-tpc needs it).
func (t Target) TCP() bool { return t.Socket == "" }

// String is the address and user, never the password.
func (t Target) String() string {
	if t.Socket != "" {
		return t.Socket + " as " + t.User
	}
	return fmt.Sprintf("%s:%d as %s", t.Host, t.Port, t.User)
}

// DSN for database db ("" = none).
func (t Target) DSN(db string) string {
	addr := fmt.Sprintf("tcp(%s:%d)", t.Host, t.Port)
	if t.Socket != "" {
		addr = "unix(" + t.Socket + ")"
	}
	cred := t.User
	if t.Password != "" {
		cred += ":" + t.Password
	}
	return fmt.Sprintf("%s@%s/%s?multiStatements=true&interpolateParams=true&timeout=10s", cred, addr, db)
}

// Open a connection pool to database db ("" = none).
func (t Target) Open(db string) (*sql.DB, error) { return sql.Open("mysql", t.DSN(db)) }

// Ping checks that the server answers within 10 s.
func (t Target) Ping(ctx context.Context) error {
	db, err := t.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("external server %s does not answer: %w", t, err)
	}
	return nil
}

var ident = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// CheckEngine checks that the server answers and offers engine (a name
// as in information_schema.ENGINES: TidesDB, InnoDB, SPIDER, ...).
func (t Target) CheckEngine(ctx context.Context, engine string) error {
	if !ident.MatchString(engine) {
		return fmt.Errorf("engine %q is not an engine name", engine)
	}
	if err := t.Ping(ctx); err != nil {
		return err
	}
	db, err := t.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	var support string
	err = db.QueryRowContext(ctx, "SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = ?", engine).Scan(&support)
	if err == sql.ErrNoRows || (err == nil && support != "YES" && support != "DEFAULT") {
		return fmt.Errorf("external server %s has no engine %s (information_schema.ENGINES)", t, engine)
	}
	return err
}

// Describe is the report's line on the server: address, version, and what
// the harness did not do to it.
func (t Target) Describe(ctx context.Context) string {
	v := "version unknown"
	if db, err := t.Open(""); err == nil {
		var s string
		if db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s) == nil {
			v = "version " + s
		}
		db.Close()
	}
	return fmt.Sprintf("external server %s (%s): not started, configured or stopped by the harness; "+
		"its settings, memory and data size are not measured", t, v)
}
