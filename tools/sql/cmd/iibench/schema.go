// schema.go is iibench's SQL: the purchases table with up to three
// secondary indexes, the multi-row INSERT, and the four query types
// (pk, pdc, marketsegment, registersegment), each an ordered range scan
// with LIMIT through its own index.
package main

import (
	"fmt"
	"strings"
	"time"
)

// index is one of iibench's secondary indexes, in the order they are
// added as num_secondary_indexes grows.
type index struct{ name, cols string }

var secondaryIndexes = []index{
	{"marketsegment", "price, customerid"},
	{"registersegment", "cashregisterid, price, customerid"},
	{"pdc", "price, dateandtime, customerid"},
}

// CreateTableSQL is the DDL of the table. dateandtime keeps microseconds
// (DATETIME(6)): the rows of a batch are one microsecond apart, which a
// plain DATETIME would fold into one second and rob pdc of cardinality.
func CreateTableSQL(t Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE `%s` (\n", t.Table)
	b.WriteString("  transactionid INT NOT NULL AUTO_INCREMENT,\n")
	b.WriteString("  dateandtime DATETIME(6) NOT NULL,\n")
	b.WriteString("  cashregisterid INT NOT NULL,\n  customerid INT NOT NULL,\n  productid INT NOT NULL,\n  price INT NOT NULL,\n")
	for i := 1; i <= t.NumCharFields; i++ {
		fmt.Fprintf(&b, "  char_field_%d VARCHAR(%d) NOT NULL,\n", i, t.LengthCharFields)
	}
	b.WriteString("  PRIMARY KEY (transactionid)")
	for _, ix := range secondaryIndexes[:t.NumSecondaryIndexes] {
		fmt.Fprintf(&b, ",\n  KEY %s (%s)", ix.name, ix.cols)
	}
	b.WriteString("\n)")
	if o := strings.TrimSpace(t.TableOptions); o != "" {
		b.WriteString(" " + o)
	}
	return b.String()
}

// InsertSQL is the INSERT of n rows with placeholders.
func InsertSQL(table string, charFields, n int) string {
	cols := []string{"dateandtime", "cashregisterid", "customerid", "productid", "price"}
	for i := 1; i <= charFields; i++ {
		cols = append(cols, fmt.Sprintf("char_field_%d", i))
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	var b strings.Builder
	b.Grow(64 + n*(len(row)+1))
	fmt.Fprintf(&b, "INSERT INTO `%s` (%s) VALUES ", table, strings.Join(cols, ", "))
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// Query types, in round-robin order.
const (
	QueryPK = iota
	QueryPDC
	QueryMarket
	QueryRegister
)

var queryNames = []string{"pk", "pdc", "marketsegment", "registersegment"}

// QueryTypes are the query types a table with n secondary indexes
// serves (a type needs its index).
func QueryTypes(n int) []int {
	l := []int{QueryPK}
	if n >= 3 {
		l = append(l, QueryPDC)
	}
	if n >= 1 {
		l = append(l, QueryMarket)
	}
	if n >= 2 {
		l = append(l, QueryRegister)
	}
	return l
}

// QuerySQL is the statement of a query type. Each starts at a random key
// of its index and reads the next `limit` entries in index order; the
// OR-chains spell "(a, b, c) >= (?, ?, ?)" so the optimizer sees a range
// on the index's leading column.
func QuerySQL(table string, kind, limit int) string {
	switch kind {
	case QueryPK:
		return fmt.Sprintf("SELECT transactionid, dateandtime, cashregisterid, customerid, productid, price FROM `%s` "+
			"WHERE transactionid >= ? ORDER BY transactionid LIMIT %d", table, limit)
	case QueryPDC:
		return fmt.Sprintf("SELECT price, dateandtime, customerid FROM `%s` FORCE INDEX (pdc) "+
			"WHERE price > ? OR (price = ? AND (dateandtime > ? OR (dateandtime = ? AND customerid >= ?))) "+
			"ORDER BY price, dateandtime, customerid LIMIT %d", table, limit)
	case QueryMarket:
		return fmt.Sprintf("SELECT price, customerid FROM `%s` FORCE INDEX (marketsegment) "+
			"WHERE price > ? OR (price = ? AND customerid >= ?) ORDER BY price, customerid LIMIT %d", table, limit)
	case QueryRegister:
		return fmt.Sprintf("SELECT cashregisterid, price, customerid FROM `%s` FORCE INDEX (registersegment) "+
			"WHERE cashregisterid > ? OR (cashregisterid = ? AND (price > ? OR (price = ? AND customerid >= ?))) "+
			"ORDER BY cashregisterid, price, customerid LIMIT %d", table, limit)
	}
	panic(fmt.Sprintf("query type %d", kind))
}

// QueryArgs draws a start key for a query type. maxID is the highest
// transactionid believed present; [from, to) is the time span rows were
// written in.
func QueryArgs(g *RowGen, kind int, maxID int64, from, to time.Time) []any {
	switch kind {
	case QueryPK:
		if maxID < 1 {
			maxID = 1
		}
		return []any{int64(g.Intn(int(maxID))) + 1}
	case QueryPDC:
		p := g.Intn(prices)
		span := to.Sub(from)
		if span <= 0 {
			span = time.Second
		}
		// whole microseconds: the driver sends a time as a string, and
		// nanosecond digits make the server truncate it (note 1292) and
		// drop dateandtime from the range, scanning all of price = p
		ts := from.Truncate(time.Microsecond).Add(time.Duration(g.Intn(int(span/time.Microsecond))) * time.Microsecond)
		return []any{p, p, ts, ts, g.Intn(customers)}
	case QueryMarket:
		p := g.Intn(prices)
		return []any{p, p, g.Intn(customers)}
	case QueryRegister:
		r, p := g.Intn(cashRegisters), g.Intn(prices)
		return []any{r, r, p, p, g.Intn(customers)}
	}
	panic(fmt.Sprintf("query type %d", kind))
}
