// compare.go: do two servers hold the same tables? Each table of the
// test's schemas is compared three ways: row count, CHECKSUM TABLE
// (computed by the server over every row; a non-empty table must not
// checksum to 0) and a SHA-256 of its rows read in primary-key order.
package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"tidesql/bench/internal/server"
)

// TableSum is one table on one server.
type TableSum struct {
	Rows     int64
	Checksum string
	Hash     string
	Engine   string
}

// tablesOf lists db.table -> engine for the test's schemas.
func tablesOf(db *sql.DB) (map[string]string, error) {
	rows, err := db.Query("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME), ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (?, ?) AND TABLE_TYPE = 'BASE TABLE'", ackDB, sbDB)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var n string
		var e sql.NullString
		if err := rows.Scan(&n, &e); err != nil {
			return nil, err
		}
		m[n] = e.String
	}
	return m, rows.Err()
}

// quoteTable turns "db.t" into `db`.`t`.
func quoteTable(name string) string {
	i := strings.IndexByte(name, '.')
	return "`" + name[:i] + "`.`" + name[i+1:] + "`"
}

// primaryKey lists the primary key's columns of db.t, in order.
func primaryKey(db *sql.DB, name string) ([]string, error) {
	i := strings.IndexByte(name, '.')
	rows, err := db.Query("SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
		name[:i], name[i+1:])
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, "`"+c+"`")
	}
	if len(cols) == 0 && rows.Err() == nil {
		return nil, fmt.Errorf("%s has no primary key", name)
	}
	return cols, rows.Err()
}

// sumTable reads the three measures of one table.
func sumTable(db *sql.DB, name, engine string) (TableSum, error) {
	ts := TableSum{Engine: engine}
	q := quoteTable(name)
	if err := db.QueryRow("SELECT COUNT(*) FROM " + q).Scan(&ts.Rows); err != nil {
		return ts, err
	}
	var tn string
	var ck sql.NullString
	if err := db.QueryRow("CHECKSUM TABLE "+q+" EXTENDED").Scan(&tn, &ck); err != nil {
		return ts, err
	}
	if !ck.Valid {
		return ts, fmt.Errorf("CHECKSUM TABLE %s returned NULL", name)
	}
	ts.Checksum = ck.String
	pk, err := primaryKey(db, name)
	if err != nil {
		return ts, err
	}
	rows, err := db.Query("SELECT * FROM " + q + " ORDER BY " + strings.Join(pk, ", "))
	if err != nil {
		return ts, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return ts, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	h := sha256.New()
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return ts, err
		}
		for _, v := range vals {
			if v == nil {
				h.Write([]byte{0})
			} else {
				fmt.Fprintf(h, "\x01%d:", len(v))
				h.Write(v)
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return ts, err
	}
	if n != ts.Rows {
		return ts, fmt.Errorf("%s: COUNT(*) %d but the ordered scan read %d rows", name, ts.Rows, n)
	}
	ts.Hash = hex.EncodeToString(h.Sum(nil))[:16]
	return ts, nil
}

// Compare is the result of comparing every table on two servers.
type Compare struct {
	Tables     int
	Rows       int64 // on the primary
	Mismatches []string
}

// compareServers compares the test's tables on a (the primary) and b.
func (t *tester) compareServers(a, b *server.Server) (Compare, error) {
	var c Compare
	da, err := a.Open("")
	if err != nil {
		return c, err
	}
	defer da.Close()
	db, err := b.Open("")
	if err != nil {
		return c, err
	}
	defer db.Close()
	ta, err := tablesOf(da)
	if err != nil {
		return c, a.Why(err)
	}
	tb, err := tablesOf(db)
	if err != nil {
		return c, b.Why(err)
	}
	names := make([]string, 0, len(ta))
	for n := range ta {
		names = append(names, n)
	}
	sort.Strings(names)
	for n := range tb {
		if _, ok := ta[n]; !ok {
			c.Mismatches = append(c.Mismatches, fmt.Sprintf("%s: on port %d only", n, b.Port()))
		}
	}
	for _, n := range names {
		if _, ok := tb[n]; !ok {
			c.Mismatches = append(c.Mismatches, fmt.Sprintf("%s: on port %d only", n, a.Port()))
			continue
		}
		sa, err := sumTable(da, n, ta[n])
		if err != nil {
			return c, a.Why(err)
		}
		sb, err := sumTable(db, n, tb[n])
		if err != nil {
			return c, b.Why(err)
		}
		c.Tables++
		c.Rows += sa.Rows
		if sa.Engine != t.o.engine || sb.Engine != t.o.engine {
			c.Mismatches = append(c.Mismatches, fmt.Sprintf("%s: engine %s on port %d, %s on port %d (want %s on both)",
				n, sa.Engine, a.Port(), sb.Engine, b.Port(), t.o.engine))
		}
		if sa.Rows > 0 && sa.Checksum == "0" {
			c.Mismatches = append(c.Mismatches, fmt.Sprintf("%s: CHECKSUM TABLE is 0 for %d rows", n, sa.Rows))
		}
		if sa != sb {
			c.Mismatches = append(c.Mismatches, fmt.Sprintf("%s: port %d rows %d checksum %s hash %s; port %d rows %d checksum %s hash %s",
				n, a.Port(), sa.Rows, sa.Checksum, sa.Hash, b.Port(), sb.Rows, sb.Checksum, sb.Hash))
		}
	}
	return c, nil
}

// checksumProbe shows CHECKSUM TABLE is a real checksum on the engine: a
// table of one row checksums to non-zero, and changing one column
// changes it.
func (t *tester) checksumProbe() error {
	db, err := t.primary.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	get := func() (string, error) {
		var n string
		var ck sql.NullString
		err := db.QueryRow("CHECKSUM TABLE "+ackDB+".checksum_probe EXTENDED").Scan(&n, &ck)
		return ck.String, err
	}
	if _, err := db.Exec("CREATE TABLE " + ackDB + ".checksum_probe (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=" + t.o.engine + ";" +
		"INSERT INTO " + ackDB + ".checksum_probe VALUES (1, 'one')"); err != nil {
		return err
	}
	c1, err := get()
	if err != nil {
		return err
	}
	if _, err := db.Exec("UPDATE " + ackDB + ".checksum_probe SET v = 'One' WHERE id = 1"); err != nil {
		return err
	}
	c2, err := get()
	if err != nil {
		return err
	}
	if c1 == "0" || c2 == "0" || c1 == "" || c1 == c2 {
		return fmt.Errorf("CHECKSUM TABLE on a %s table is not a usable checksum: %q for one row, %q after changing it", t.o.engine, c1, c2)
	}
	t.note("CHECKSUM TABLE on %s: one row %s, after changing a column %s (non-zero, changes with the data)", t.o.engine, c1, c2)
	return nil
}

// ackIDs reads the logged ids of ack_a and ack_b and checks the writers'
// invariants on s: the same ids in both, SUM(counters.n) = COUNT(ack_a).
func (t *tester) ackIDs(s *server.Server) (map[int64]bool, []string, error) {
	db, err := s.Open("")
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	read := func(table string) (map[int64]bool, error) {
		rows, err := db.Query("SELECT id FROM " + ackDB + "." + table)
		if err != nil {
			return nil, s.Why(err)
		}
		defer rows.Close()
		m := map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			m[id] = true
		}
		return m, rows.Err()
	}
	a, err := read("ack_a")
	if err != nil {
		return nil, nil, err
	}
	b, err := read("ack_b")
	if err != nil {
		return nil, nil, err
	}
	var bad []string
	if d := diff(a, b); len(d) > 0 {
		bad = append(bad, fmt.Sprintf("port %d: %d ids in ack_a but not ack_b: %s", s.Port(), len(d), joinMax(d, 8)))
	}
	if d := diff(b, a); len(d) > 0 {
		bad = append(bad, fmt.Sprintf("port %d: %d ids in ack_b but not ack_a: %s", s.Port(), len(d), joinMax(d, 8)))
	}
	var sum sql.NullInt64
	if err := db.QueryRow("SELECT SUM(n) FROM " + ackDB + ".counters").Scan(&sum); err != nil {
		return nil, nil, s.Why(err)
	}
	if sum.Int64 != int64(len(a)) {
		bad = append(bad, fmt.Sprintf("port %d: SUM(counters.n) = %d but ack_a holds %d rows", s.Port(), sum.Int64, len(a)))
	}
	return a, bad, nil
}

// diff lists the ids in a and not in b, sorted.
func diff(a, b map[int64]bool) []string {
	var ids []int64
	for id := range a {
		if !b[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return out
}
