// Package retry calls an operation until it succeeds or a budget of attempts runs
// out, sleeping with capped exponential backoff between attempts.
package retry

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoAttempts is returned by Do when the policy allows no attempt at all.
var ErrNoAttempts = errors.New("retry: Attempts must be at least 1")

// Policy says how often and how patiently to retry.
type Policy struct {
	// Attempts is the most calls Do makes to the operation, the first one included.
	Attempts int
	// Base is the delay after the first failed attempt; each later delay doubles,
	// and no delay exceeds Max.
	Base, Max time.Duration
	// Sleep waits between attempts; nil means time.Sleep.
	Sleep func(time.Duration)
}

// Backoff returns the delay after failed attempt n (1-based): min(Base*2^(n-1), Max).
// It is 0 when n < 1 or Base or Max is not positive, and never overflows.
func (p Policy) Backoff(n int) time.Duration {
	if n < 1 || p.Base <= 0 || p.Max <= 0 {
		return 0
	}
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		if d > p.Max/2 {
			return p.Max
		}
		d *= 2
	}
	return min(d, p.Max)
}

// Do calls op until it returns nil or has been called p.Attempts times. op gets the
// 1-based number of the attempt. After failed attempt n, Do sleeps p.Backoff(n)
// before the next attempt; it does not sleep after the last one. Do returns nil on
// success, or the last error of op wrapped with the number of attempts.
func (p Policy) Do(op func(attempt int) error) error {
	if p.Attempts < 1 {
		return ErrNoAttempts
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	err := op(1)
	for retry := 1; err != nil && retry <= p.Attempts; retry++ {
		sleep(p.Backoff(retry))
		err = op(retry + 1)
	}
	if err != nil {
		return fmt.Errorf("retry: giving up after %d attempts: %w", p.Attempts, err)
	}
	return nil
}
