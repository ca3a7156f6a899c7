package model

import (
	"context"
	"math/rand/v2"
	"time"
)

// Clock is the time source of the adapters (latency) and wrappers (backoff, breaker
// cool-down). Tests inject a fake one (modeltest.Clock) to make delays deterministic
// and instant.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until ctx is done, in which case it returns ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// Rand is the random source of backoff jitter; *rand.Rand from math/rand/v2
// implements it.
type Rand interface {
	// Int64N returns a number in [0, n).
	Int64N(n int64) int64
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }

func clockOr(c Clock) Clock {
	if c == nil {
		return systemClock{}
	}
	return c
}

type attemptKey struct{}

// withAttempt tells the adapter which attempt of Retry it serves, for Meta.Attempt.
func withAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

func attemptFrom(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}
