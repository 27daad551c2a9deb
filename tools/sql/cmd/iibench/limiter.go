// limiter.go paces the workers: a writer's row budget per 1-second
// window (max_rows_per_second spread across the writers) and a query
// thread's evenly spaced start times (queries_per_second spread across
// the threads). Both take a Clock so tests run on a fake one. Neither
// catches up after a stall: time lost to a slow statement is lost.
package main

import (
	"context"
	"time"
)

// Clock is time as the pacers see it.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends (then returns its error).
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RowLimiter caps one writer at perSecond rows per 1-second window. A
// batch is admitted while the window's budget is not used up; what a
// batch overshoots is charged to the next window, so the long-run rate
// is exactly perSecond. After a window passes unused (a stall), the next
// starts afresh: no burst to make up for lost time.
type RowLimiter struct {
	clock     Clock
	perSecond float64
	start     time.Time // current window's start
	used      float64   // rows charged to the current window
}

// NewRowLimiter returns nil for perSecond <= 0 (uncapped).
func NewRowLimiter(c Clock, perSecond float64) *RowLimiter {
	if perSecond <= 0 {
		return nil
	}
	return &RowLimiter{clock: c, perSecond: perSecond, start: c.Now()}
}

// Wait blocks until n rows may be inserted and charges them.
func (l *RowLimiter) Wait(ctx context.Context, n int) error {
	if l == nil {
		return ctx.Err()
	}
	for {
		l.roll(l.clock.Now())
		if l.used < l.perSecond {
			l.used += float64(n)
			return nil
		}
		if err := l.clock.Sleep(ctx, l.start.Add(time.Second).Sub(l.clock.Now())); err != nil {
			return err
		}
	}
}

// roll moves the window forward to now.
func (l *RowLimiter) roll(now time.Time) {
	end := l.start.Add(time.Second)
	if now.Before(end) {
		return
	}
	if now.Before(end.Add(time.Second)) {
		// the next window: carry what the last batch overshot
		l.used -= l.perSecond
		if l.used < 0 {
			l.used = 0
		}
		l.start = end
		return
	}
	l.start, l.used = now, 0
}

// Pacer spaces one query thread's starts evenly: interval = threads /
// queries_per_second. A start that is late (the previous query was slow)
// runs at once, and the next is one interval after it: no catch-up burst.
type Pacer struct {
	clock    Clock
	interval time.Duration
	next     time.Time
}

// NewPacer returns nil for an interval <= 0 (unpaced). offset delays the
// first start, so the threads' starts interleave.
func NewPacer(c Clock, interval, offset time.Duration) *Pacer {
	if interval <= 0 {
		return nil
	}
	return &Pacer{clock: c, interval: interval, next: c.Now().Add(offset)}
}

// Wait blocks until the next start time.
func (p *Pacer) Wait(ctx context.Context) error {
	if p == nil {
		return ctx.Err()
	}
	now := p.clock.Now()
	if now.Before(p.next) {
		if err := p.clock.Sleep(ctx, p.next.Sub(now)); err != nil {
			return err
		}
		now = p.next
	}
	// clamp: a late start does not bring the next one forward
	p.next = now.Add(p.interval)
	return nil
}
