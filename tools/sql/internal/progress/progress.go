// Package progress prints where a long benchmark run is: elapsed time,
// an estimate of what remains, the current step and its latest figure.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Tracker knows the planned duration of the whole run and what is done.
type Tracker struct {
	mu      sync.Mutex
	out     io.Writer
	start   time.Time
	planned time.Duration // total planned (estimate)
	done    time.Duration // planned time of finished steps
	step    string
}

// New starts a tracker for a run planned to take about `planned`.
func New(planned time.Duration) *Tracker {
	return &Tracker{out: os.Stderr, start: time.Now(), planned: planned}
}

// Step names the step starting now.
func (t *Tracker) Step(name string) {
	t.mu.Lock()
	t.step = name
	t.mu.Unlock()
	t.Printf("")
}

// Done records that a step planned to take d has finished.
func (t *Tracker) Done(d time.Duration) {
	t.mu.Lock()
	t.done += d
	t.mu.Unlock()
}

// Remaining estimates the time left: the planned time not yet done,
// scaled by how the finished part compared with its plan.
func (t *Tracker) Remaining() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	left := t.planned - t.done
	if left < 0 {
		left = 0
	}
	el := time.Since(t.start)
	if t.done > 0 && el > t.done {
		left = time.Duration(float64(left) * float64(el) / float64(t.done))
	}
	return left
}

// Printf prints "[elapsed / ~remaining] step: msg".
func (t *Tracker) Printf(format string, a ...interface{}) {
	rem := t.Remaining()
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := fmt.Sprintf(format, a...)
	if msg != "" {
		msg = ": " + msg
	}
	fmt.Fprintf(t.out, "[%s elapsed, ~%s left] %s%s\n", Round(time.Since(t.start)), Round(rem), t.step, msg)
}

// Round prints a duration to the second.
func Round(d time.Duration) time.Duration { return d.Round(time.Second) }
