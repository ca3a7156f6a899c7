package model

import (
	"context"
	"errors"
	"time"
)

// RetryPolicy configures Retry. The zero value gives the defaults.
type RetryPolicy struct {
	// MaxAttempts counts the first try; default 4. 1 disables retrying.
	MaxAttempts int
	// BaseDelay is the backoff ceiling of the first retry, doubled per retry;
	// default 1s.
	BaseDelay time.Duration
	// MaxDelay caps one wait; default 60s. A Retry-After longer than this ends the
	// retries rather than retrying before the provider said to.
	MaxDelay time.Duration
	// MaxTotalDelay caps the sum of the waits of one Complete; default 3 minutes.
	MaxTotalDelay time.Duration
	Clock         Clock
	Rand          Rand
	// OnRetry, if set, is called before each wait.
	OnRetry func(RetryEvent)
}

// RetryEvent describes a failed attempt that Retry is about to repeat.
type RetryEvent struct {
	Attempt    int           `json:"attempt"` // the attempt that failed, 1-based
	ErrorClass string        `json:"error_class"`
	Status     int           `json:"status,omitempty"`
	RequestID  string        `json:"request_id,omitempty"`
	Backoff    time.Duration `json:"backoff_ns"`
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
}

// Retry repeats a call that failed with a retryable error (Retryable: 429, 5xx and
// 529, network errors) after exponential backoff with full jitter, waiting at least
// as long as a Retry-After asks. Everything else returns at once: a 400, an
// authentication error, a context overflow, an open circuit, a cancelled context.
// It never sleeps past the context's deadline. It is safe for concurrent use.
type Retry struct {
	next Client
	p    RetryPolicy
}

// NewRetry wraps next.
func NewRetry(next Client, p RetryPolicy) *Retry {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = time.Minute
	}
	if p.MaxTotalDelay <= 0 {
		p.MaxTotalDelay = 3 * time.Minute
	}
	p.Clock = clockOr(p.Clock)
	if p.Rand == nil {
		p.Rand = globalRand{}
	}
	return &Retry{next: next, p: p}
}

// Complete calls the wrapped client until it succeeds, fails for good, or the
// policy's limits are reached; then it returns a *RetryError wrapping the last error.
func (r *Retry) Complete(ctx context.Context, req Request) (Response, error) {
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Complete(withAttempt(ctx, attempt), req)
		if err == nil || !Retryable(err) || ctx.Err() != nil {
			return resp, err
		}
		giveUp := func(reason string) (Response, error) {
			return resp, &RetryError{Attempts: attempt, Waited: waited, Reason: reason, Err: err}
		}
		if attempt >= r.p.MaxAttempts {
			return giveUp("attempts used up")
		}
		var after time.Duration
		var ae *APIError
		if errors.As(err, &ae) {
			after = ae.RetryAfter
		}
		if after > r.p.MaxDelay {
			return giveUp("provider asked to wait " + after.String())
		}
		d := max(r.backoff(attempt), after)
		if waited+d > r.p.MaxTotalDelay {
			return giveUp("total delay used up")
		}
		// Context deadlines are wall-clock time whatever Clock is.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
			return giveUp("deadline before the next attempt")
		}
		if r.p.OnRetry != nil {
			ev := RetryEvent{Attempt: attempt, ErrorClass: ErrorClass(err), Backoff: d, RetryAfter: after,
				RequestID: resp.Meta.RequestID, Status: resp.Meta.Status}
			r.p.OnRetry(ev)
		}
		if err := r.p.Clock.Sleep(ctx, d); err != nil {
			return resp, err
		}
		waited += d
	}
}

// backoff is full jitter: uniform in [0, min(MaxDelay, BaseDelay·2^(attempt-1))].
func (r *Retry) backoff(attempt int) time.Duration {
	ceiling := r.p.BaseDelay
	for i := 1; i < attempt && ceiling < r.p.MaxDelay; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, r.p.MaxDelay)
	return time.Duration(r.p.Rand.Int64N(int64(ceiling) + 1))
}
