package modeltest

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake model.Clock. Sleep returns at once, advancing the time by the
// duration and recording it, so tests can assert the exact waits of a backoff.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewClock returns a Clock at 2026-01-01T00:00:00Z.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the time by it; it fails only if ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

// Advance moves the time forward without recording a sleep.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleeps returns the durations passed to Sleep, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// FixedRand is a model.Rand that always returns the same fraction of its range:
// Int64N(n) is Frac·(n-1), so 0 gives the shortest jittered wait and 1 the longest.
type FixedRand struct{ Frac float64 }

func (r FixedRand) Int64N(n int64) int64 {
	if n <= 1 {
		return 0
	}
	return int64(r.Frac * float64(n-1))
}
