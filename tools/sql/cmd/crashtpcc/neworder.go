// neworder.go is the client-side half of the crash test: TPC-C New-Order
// transactions run over go-sql-driver/mysql in go-tpc's schema, each one
// logged (in this process, which outlives the killed server) only after
// COMMIT returned OK. A transaction whose COMMIT failed (the server died
// under it) is "in doubt": either outcome is correct, it is only counted.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

// TPC-C's fixed cardinalities (go-tpc's as well).
const (
	districtsPerWarehouse = 10
	customersPerDistrict  = 3000
	items                 = 100000
)

// Order is one New-Order transaction: its key and what identifies it as
// the driver's own (an o_id of an order lost at the relaxed preset is
// given again to the next order of its district).
type Order struct {
	W, D, O int
	C       int // o_c_id
	OlCnt   int // o_ol_cnt = its order lines
	Cycle   int
}

// AckLog holds the orders whose COMMIT returned OK, and those in doubt.
type AckLog struct {
	mu      sync.Mutex
	acked   []Order
	inDoubt []Order
}

func (l *AckLog) ack(o Order) {
	l.mu.Lock()
	l.acked = append(l.acked, o)
	l.mu.Unlock()
}

func (l *AckLog) doubt(o Order) {
	l.mu.Lock()
	l.inDoubt = append(l.inDoubt, o)
	l.mu.Unlock()
}

// Cycle returns the acknowledged and in-doubt orders of cycle c.
func (l *AckLog) Cycle(c int) (acked, inDoubt []Order) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.acked {
		if o.Cycle == c {
			acked = append(acked, o)
		}
	}
	for _, o := range l.inDoubt {
		if o.Cycle == c {
			inDoubt = append(inDoubt, o)
		}
	}
	return acked, inDoubt
}

// NewOrderDriver runs New-Order transactions on clients connections until
// its context ends or the server goes away.
type NewOrderDriver struct {
	DB         *sql.DB
	Warehouses int
	Cycle      int
	Log        *AckLog
	Seed       int64
	// Errors counts transactions that failed before COMMIT (deadlocks,
	// lock waits, the server gone): none of them is logged.
	mu     sync.Mutex
	Errors int
	First  string // the first such error, for the report
}

// Run starts clients workers and returns when all have stopped.
func (d *NewOrderDriver) Run(ctx context.Context, clients int) {
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(d.Seed + int64(i)*7919))
			fails := 0
			for ctx.Err() == nil {
				err := d.one(ctx, r)
				if err == nil {
					fails = 0
					continue
				}
				d.mu.Lock()
				d.Errors++
				if d.First == "" {
					d.First = err.Error()
				}
				d.mu.Unlock()
				// Back off while the server is gone (after the kill, until
				// the context ends).
				fails++
				if fails > 3 {
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
				}
			}
		}(i)
	}
	wg.Wait()
}

type line struct {
	iid, qty int
	price    float64
	sQty     int
	dist     string
	amount   float64
}

// one runs one New-Order (TPC-C 2.4.2, all lines supplied by the home
// warehouse) and logs it if COMMIT returned OK.
func (d *NewOrderDriver) one(ctx context.Context, r *rand.Rand) error {
	o := Order{W: 1 + r.Intn(d.Warehouses), D: 1 + r.Intn(districtsPerWarehouse), C: 1 + r.Intn(customersPerDistrict),
		OlCnt: 5 + r.Intn(11), Cycle: d.Cycle}
	seen := map[int]bool{}
	ls := make([]line, 0, o.OlCnt)
	for len(ls) < o.OlCnt {
		id := 1 + r.Intn(items)
		if !seen[id] {
			seen[id] = true
			ls = append(ls, line{iid: id, qty: 1 + r.Intn(10)})
		}
	}
	// Stock rows locked in item order: fewer deadlocks between the workers.
	sort.Slice(ls, func(i, j int) bool { return ls[i].iid < ls[j].iid })

	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	committing := false
	defer func() {
		if !committing {
			_ = tx.Rollback()
		}
	}()
	var cDiscount, wTax, dTax float64
	var cLast, cCredit string
	if err := tx.QueryRowContext(ctx, "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse "+
		"WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?", o.W, o.D, o.C).Scan(&cDiscount, &cLast, &cCredit, &wTax); err != nil {
		return fmt.Errorf("customer: %w", err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE",
		o.D, o.W).Scan(&o.O, &dTax); err != nil {
		return fmt.Errorf("district: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE district SET d_next_o_id = ? WHERE d_id = ? AND d_w_id = ?", o.O+1, o.D, o.W); err != nil {
		return fmt.Errorf("district update: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "+
		"VALUES (?, ?, ?, ?, ?, ?, 1)", o.O, o.D, o.W, o.C, time.Now().Format("2006-01-02 15:04:05"), o.OlCnt); err != nil {
		return fmt.Errorf("orders: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)", o.O, o.D, o.W); err != nil {
		return fmt.Errorf("new_order: %w", err)
	}
	idx := map[int]*line{}
	args := make([]interface{}, 0, 2*len(ls))
	ph := make([]string, 0, len(ls))
	for i := range ls {
		idx[ls[i].iid] = &ls[i]
		args = append(args, ls[i].iid)
		ph = append(ph, "?")
	}
	if err := scanRows(tx.QueryContext(ctx, "SELECT i_id, i_price FROM item WHERE i_id IN ("+strings.Join(ph, ",")+")", args...))(
		func(rows *sql.Rows) error {
			var id int
			var price float64
			if err := rows.Scan(&id, &price); err != nil {
				return err
			}
			if l := idx[id]; l != nil {
				l.price = price
			}
			return nil
		}); err != nil {
		return fmt.Errorf("item: %w", err)
	}
	args, ph = args[:0], ph[:0]
	for i := range ls {
		args = append(args, o.W, ls[i].iid)
		ph = append(ph, "(?,?)")
	}
	distCol := fmt.Sprintf("s_dist_%02d", o.D)
	found := 0
	if err := scanRows(tx.QueryContext(ctx, "SELECT s_i_id, s_quantity, "+distCol+" FROM stock WHERE (s_w_id, s_i_id) IN ("+
		strings.Join(ph, ",")+") FOR UPDATE", args...))(func(rows *sql.Rows) error {
		var id, q int
		var dist string
		if err := rows.Scan(&id, &q, &dist); err != nil {
			return err
		}
		if l := idx[id]; l != nil {
			l.sQty, l.dist = q, dist
			found++
		}
		return nil
	}); err != nil {
		return fmt.Errorf("stock: %w", err)
	}
	if found != len(ls) {
		return fmt.Errorf("stock: %d of %d items found in warehouse %d", found, len(ls), o.W)
	}
	args, ph = args[:0], ph[:0]
	for i := range ls {
		l := &ls[i]
		q := l.sQty - l.qty
		if q < 10 {
			q += 91
		}
		if _, err := tx.ExecContext(ctx, "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1 "+
			"WHERE s_i_id = ? AND s_w_id = ?", q, l.qty, l.iid, o.W); err != nil {
			return fmt.Errorf("stock update: %w", err)
		}
		l.amount = float64(l.qty) * l.price * (1 + wTax + dTax) * (1 - cDiscount)
		args = append(args, o.O, o.D, o.W, i+1, l.iid, o.W, l.qty, l.amount, l.dist)
		ph = append(ph, "(?,?,?,?,?,?,?,?,?)")
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "+
		"ol_quantity, ol_amount, ol_dist_info) VALUES "+strings.Join(ph, ","), args...); err != nil {
		return fmt.Errorf("order_line: %w", err)
	}
	committing = true
	if err := tx.Commit(); err != nil {
		// Sent, not acknowledged: the server may or may not have it.
		d.Log.doubt(o)
		return fmt.Errorf("commit: %w", err)
	}
	d.Log.ack(o)
	return nil
}

// scanRows adapts QueryContext's results to a per-row callback.
func scanRows(rows *sql.Rows, err error) func(func(*sql.Rows) error) error {
	return func(f func(*sql.Rows) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := f(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}
