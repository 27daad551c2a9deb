// verify.go checks logged orders against the restarted server: each one is
// either wholly present (its orders row with the driver's customer and
// line count, as many order_line rows, and a new_order row exactly when
// it is not delivered) or wholly absent; a half-present order is an
// atomicity failure at any preset.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
)

// Found is what the database holds for one order key.
type Found struct {
	Order    bool // an orders row
	C, OlCnt int  // its o_c_id, o_ol_cnt
	Carrier  bool // o_carrier_id set (delivered)
	Lines    int  // order_line rows
	NewOrder bool // a new_order row
}

// Status of a logged order after the restart.
type Status int

const (
	Present Status = iota // wholly there
	Lost                  // wholly absent, or its o_id now holds another order
	Partial               // some of its rows only, or inconsistent rows
)

// Classify says what became of o given f.
func Classify(o Order, f Found) (Status, string) {
	if !f.Order {
		if f.Lines == 0 && !f.NewOrder {
			return Lost, ""
		}
		return Partial, fmt.Sprintf("order (%d,%d,%d): no orders row but %d order lines, new_order %v", o.W, o.D, o.O, f.Lines, f.NewOrder)
	}
	if f.C != o.C || f.OlCnt != o.OlCnt {
		// Another order took the o_id: ours was lost and d_next_o_id went
		// back (possible only when acknowledged commits are lost).
		return Lost, ""
	}
	if f.Lines != o.OlCnt {
		return Partial, fmt.Sprintf("order (%d,%d,%d): o_ol_cnt %d but %d order lines", o.W, o.D, o.O, o.OlCnt, f.Lines)
	}
	if f.NewOrder == f.Carrier {
		return Partial, fmt.Sprintf("order (%d,%d,%d): carrier set %v, new_order row %v", o.W, o.D, o.O, f.Carrier, f.NewOrder)
	}
	return Present, ""
}

// Verdict of a set of logged orders.
type Verdict struct {
	Checked, Present, Lost, Partial int
	// Holes: lost orders older (a smaller o_id in the same district) than
	// a present one of the same set: not a prefix.
	Holes    int
	Problems []string // the first few partial orders
	LostKeys []Order  // the lost orders (first few kept)
}

// Judge classifies orders with found (keyed by W, D, O).
func Judge(orders []Order, found map[[3]int]Found) Verdict {
	var v Verdict
	maxPresent := map[[2]int]int{}
	var lost []Order
	for _, o := range orders {
		v.Checked++
		st, why := Classify(o, found[[3]int{o.W, o.D, o.O}])
		switch st {
		case Present:
			v.Present++
			if k := [2]int{o.W, o.D}; o.O > maxPresent[k] {
				maxPresent[k] = o.O
			}
		case Lost:
			v.Lost++
			lost = append(lost, o)
		case Partial:
			v.Partial++
			if len(v.Problems) < 10 {
				v.Problems = append(v.Problems, why)
			}
		}
	}
	for _, o := range lost {
		if o.O < maxPresent[[2]int{o.W, o.D}] {
			v.Holes++
		}
	}
	sort.Slice(lost, func(i, j int) bool {
		a, b := lost[i], lost[j]
		if a.W != b.W {
			return a.W < b.W
		}
		if a.D != b.D {
			return a.D < b.D
		}
		return a.O < b.O
	})
	if len(lost) > 10 {
		lost = lost[:10]
	}
	v.LostKeys = lost
	return v
}

// Lookup reads what the database holds for the keys of orders: per
// district, the o_id range they span, in three range queries.
func Lookup(ctx context.Context, db *sql.DB, orders []Order) (map[[3]int]Found, error) {
	type rng struct{ lo, hi int }
	ranges := map[[2]int]*rng{}
	for _, o := range orders {
		k := [2]int{o.W, o.D}
		if r := ranges[k]; r == nil {
			ranges[k] = &rng{o.O, o.O}
		} else {
			if o.O < r.lo {
				r.lo = o.O
			}
			if o.O > r.hi {
				r.hi = o.O
			}
		}
	}
	found := map[[3]int]Found{}
	for k, r := range ranges {
		w, d := k[0], k[1]
		err := scanRows(db.QueryContext(ctx, "SELECT o_id, o_c_id, o_ol_cnt, o_carrier_id IS NOT NULL FROM orders "+
			"WHERE o_w_id = ? AND o_d_id = ? AND o_id BETWEEN ? AND ?", w, d, r.lo, r.hi))(func(rows *sql.Rows) error {
			var id, c, n int
			var carrier bool
			if err := rows.Scan(&id, &c, &n, &carrier); err != nil {
				return err
			}
			f := found[[3]int{w, d, id}]
			f.Order, f.C, f.OlCnt, f.Carrier = true, c, n, carrier
			found[[3]int{w, d, id}] = f
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading orders: %w", err)
		}
		err = scanRows(db.QueryContext(ctx, "SELECT ol_o_id, COUNT(*) FROM order_line "+
			"WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id BETWEEN ? AND ? GROUP BY ol_o_id", w, d, r.lo, r.hi))(func(rows *sql.Rows) error {
			var id, n int
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			f := found[[3]int{w, d, id}]
			f.Lines = n
			found[[3]int{w, d, id}] = f
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading order_line: %w", err)
		}
		err = scanRows(db.QueryContext(ctx, "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id BETWEEN ? AND ?",
			w, d, r.lo, r.hi))(func(rows *sql.Rows) error {
			var id int
			if err := rows.Scan(&id); err != nil {
				return err
			}
			f := found[[3]int{w, d, id}]
			f.NewOrder = true
			found[[3]int{w, d, id}] = f
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading new_order: %w", err)
		}
	}
	return found, nil
}
