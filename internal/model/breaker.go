package model

import (
	"context"
	"sync"
	"time"
)

// BreakerPolicy configures Breaker. The zero value gives the defaults.
type BreakerPolicy struct {
	// Threshold is the number of consecutive failures that opens the circuit;
	// default 5.
	Threshold int
	// CoolDown is how long the circuit stays open before one probe; default 30s.
	CoolDown time.Duration
	Clock    Clock
}

// BreakerState is the state of a circuit.
type BreakerState int

const (
	Closed   BreakerState = iota // calls pass
	Open                         // calls fail with ErrCircuitOpen until the cool-down ends
	HalfOpen                     // one probe passes; its outcome closes or reopens
)

func (s BreakerState) String() string {
	return [...]string{"closed", "open", "half-open"}[s]
}

// Breaker is a circuit breaker for one provider; share one Breaker among every
// session that uses the provider. A failure is what Retryable calls retryable
// (429, 5xx, network): the provider, not the request, is in trouble. Successes
// and other errors (a 400, a context overflow, authentication) close the count;
// a cancelled call changes nothing. Put it inside Retry, so that each attempt
// counts and an open circuit stops the retries:
//
//	NewRetry(NewBreaker(adapter, BreakerPolicy{}), RetryPolicy{})
type Breaker struct {
	next     Client
	p        BreakerPolicy
	provider string

	mu       sync.Mutex
	state    BreakerState
	failures int
	openedAt time.Time
	probing  bool
}

// NewBreaker wraps next; provider names the circuit in CircuitOpenError.
func NewBreaker(next Client, provider string, p BreakerPolicy) *Breaker {
	if p.Threshold <= 0 {
		p.Threshold = 5
	}
	if p.CoolDown <= 0 {
		p.CoolDown = 30 * time.Second
	}
	p.Clock = clockOr(p.Clock)
	return &Breaker{next: next, p: p, provider: provider}
}

// State returns the current state, moving open to half-open once the cool-down
// has passed.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && !b.p.Clock.Now().Before(b.openedAt.Add(b.p.CoolDown)) {
		return HalfOpen
	}
	return b.state
}

// Complete passes the call through unless the circuit is open.
func (b *Breaker) Complete(ctx context.Context, req Request) (Response, error) {
	probe, err := b.admit()
	if err != nil {
		return Response{}, err
	}
	resp, err := b.next.Complete(ctx, req)
	b.record(ctx, probe, err)
	return resp, err
}

func (b *Breaker) admit() (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.p.Clock.Now()
	if b.state == Open {
		if wait := b.openedAt.Add(b.p.CoolDown).Sub(now); wait > 0 {
			return false, &CircuitOpenError{Provider: b.provider, RetryIn: wait}
		}
		b.state = HalfOpen
	}
	if b.state == HalfOpen {
		if b.probing {
			return false, &CircuitOpenError{Provider: b.provider}
		}
		b.probing = true
		return true, nil
	}
	return false, nil
}

func (b *Breaker) record(ctx context.Context, probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// Cancelled by the caller: says nothing about the provider. A cancelled
		// probe leaves the circuit half-open for the next caller to probe.
	case Retryable(err):
		if probe {
			b.state, b.openedAt = Open, b.p.Clock.Now()
		} else if b.state == Closed {
			b.failures++
			if b.failures >= b.p.Threshold {
				b.state, b.openedAt = Open, b.p.Clock.Now()
			}
		}
	default:
		if probe || b.state == Closed {
			b.state, b.failures = Closed, 0
		}
	}
}
