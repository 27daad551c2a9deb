// limiter_test.go checks the pacers on a fake clock: the row cap holds
// per window and on average, and neither pacer bursts after a stall.
package main

import (
	"context"
	"testing"
	"time"
)

// fakeClock advances only when slept on.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return ctx.Err()
}

func TestRowLimiterHoldsTheRate(t *testing.T) {
	for _, c := range []struct {
		perSecond float64
		batch     int
	}{{3750, 1000}, {2500, 1000}, {100, 1000}, {50000, 1000}, {10, 1}} {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		start := clk.now
		l := NewRowLimiter(clk, c.perSecond)
		perWindow := map[int64]int{}
		rows := 0
		for clk.now.Sub(start) < 60*time.Second {
			if err := l.Wait(context.Background(), c.batch); err != nil {
				t.Fatal(err)
			}
			perWindow[int64(clk.now.Sub(start)/time.Second)] += c.batch
			rows += c.batch
			clk.now = clk.now.Add(time.Millisecond) // the batch takes 1 ms
		}
		el := clk.now.Sub(start).Seconds()
		if got := float64(rows) / el; got > c.perSecond*1.05+float64(c.batch)/el || got < c.perSecond*0.9 {
			t.Errorf("%v rows/s with batches of %d: got %.0f rows/s", c.perSecond, c.batch, got)
		}
		for w, n := range perWindow {
			if float64(n) > c.perSecond+float64(c.batch) {
				t.Errorf("%v rows/s: second %d got %d rows", c.perSecond, w, n)
			}
		}
	}
}

func TestRowLimiterNoCatchUpAfterStall(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	l := NewRowLimiter(clk, 2000)
	ctx := context.Background()
	l.Wait(ctx, 1000)
	clk.now = clk.now.Add(5 * time.Second) // a 5-second stall
	t0 := clk.now
	rows := 0
	for clk.now.Sub(t0) < time.Second {
		l.Wait(ctx, 1000)
		if clk.now.Sub(t0) < time.Second {
			rows += 1000
		}
	}
	if rows > 2000 {
		t.Errorf("after a stall the next second admitted %d rows, want <= 2000", rows)
	}
	if NewRowLimiter(clk, 0) != nil {
		t.Errorf("a zero cap should mean no limiter")
	}
	var none *RowLimiter
	if err := none.Wait(ctx, 5); err != nil {
		t.Errorf("uncapped wait: %v", err)
	}
}

func TestRowLimiterStopsOnCancel(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	l := NewRowLimiter(clk, 10)
	ctx, cancel := context.WithCancel(context.Background())
	l.Wait(ctx, 10)
	cancel()
	if err := l.Wait(ctx, 10); err == nil {
		t.Fatal("a cancelled wait returned nil")
	}
}

func TestPacerSpacesStartsWithoutBurst(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	interval := 80 * time.Millisecond // 8 threads at 100 qps
	p := NewPacer(clk, interval, 30*time.Millisecond)
	ctx := context.Background()
	var starts []time.Time
	for i := 0; i < 5; i++ {
		p.Wait(ctx)
		starts = append(starts, clk.now)
		clk.now = clk.now.Add(5 * time.Millisecond) // fast queries
	}
	if !starts[0].Equal(time.Unix(0, 0).Add(30 * time.Millisecond)) {
		t.Errorf("first start %v, want at the 30 ms offset", starts[0])
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d != interval {
			t.Errorf("start %d is %v after the previous, want %v", i, d, interval)
		}
	}
	// a slow query (1 s) makes the next start late, and the one after
	// comes a full interval later, not at once
	clk.now = clk.now.Add(time.Second)
	p.Wait(ctx)
	late := clk.now
	clk.now = clk.now.Add(time.Millisecond)
	p.Wait(ctx)
	if d := clk.now.Sub(late); d != interval {
		t.Errorf("after a slow query the next start came %v later, want %v (no catch-up)", d, interval)
	}
}
