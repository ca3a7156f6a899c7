package model

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/model/modeltest"
)

// fakeClient returns the scripted errors in order (nil is a success) and counts
// calls; block, if set, holds each call until closed.
type fakeClient struct {
	mu    sync.Mutex
	errs  []error
	calls int
	block chan struct{}
}

func (f *fakeClient) Complete(ctx context.Context, _ Request) (Response, error) {
	f.mu.Lock()
	i := f.calls
	f.calls++
	f.mu.Unlock()
	if f.block != nil {
		<-f.block
	}
	if i < len(f.errs) && f.errs[i] != nil {
		return Response{}, f.errs[i]
	}
	return Response{Text: "ok"}, nil
}

var (
	e500     = &APIError{Provider: "p", Status: 500, kind: ErrUnavailable}
	e429     = &APIError{Provider: "p", Status: 429, kind: ErrRateLimited}
	e400     = &APIError{Provider: "p", Status: 400, kind: ErrBadRequest}
	e401     = &APIError{Provider: "p", Status: 401, kind: ErrAuth}
	eNetwork = &NetworkError{Provider: "p", Err: errors.New("connection reset")}
)

func TestBreaker(t *testing.T) {
	type call struct {
		advance time.Duration // move the clock first
		err     error         // what the provider would answer
		want    error         // what the caller sees; ErrCircuitOpen means not passed through
		state   BreakerState  // after the call
	}
	cases := []struct {
		name  string
		calls []call
	}{
		{"opens after threshold consecutive failures", []call{
			{err: e500, want: ErrUnavailable, state: Closed},
			{err: e429, want: ErrRateLimited, state: Closed},
			{err: eNetwork, want: ErrNetwork, state: Open},
			{want: ErrCircuitOpen, state: Open},
		}},
		{"a success resets the count", []call{
			{err: e500, want: ErrUnavailable, state: Closed},
			{err: e500, want: ErrUnavailable, state: Closed},
			{state: Closed},
			{err: e500, want: ErrUnavailable, state: Closed},
			{err: e500, want: ErrUnavailable, state: Closed},
		}},
		{"client errors are not provider failures", []call{
			{err: e500, want: ErrUnavailable, state: Closed},
			{err: e500, want: ErrUnavailable, state: Closed},
			{err: e400, want: ErrBadRequest, state: Closed},
			{err: e401, want: ErrAuth, state: Closed},
			{err: e500, want: ErrUnavailable, state: Closed},
		}},
		{"half-open probe success closes", []call{
			{err: e500, want: ErrUnavailable}, {err: e500, want: ErrUnavailable}, {err: e500, want: ErrUnavailable, state: Open},
			{advance: 9 * time.Second, want: ErrCircuitOpen, state: Open},
			{advance: time.Second, state: Closed},
			{err: e500, want: ErrUnavailable, state: Closed},
		}},
		{"half-open probe failure reopens for a full cool-down", []call{
			{err: e500, want: ErrUnavailable}, {err: e500, want: ErrUnavailable}, {err: e500, want: ErrUnavailable, state: Open},
			{advance: 10 * time.Second, err: e500, want: ErrUnavailable, state: Open},
			{advance: 9 * time.Second, want: ErrCircuitOpen, state: Open},
			{advance: time.Second, state: Closed},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := modeltest.NewClock()
			fake := &fakeClient{}
			b := NewBreaker(fake, "p", BreakerPolicy{Threshold: 3, CoolDown: 10 * time.Second, Clock: clock})
			passed := 0
			for i, c := range tc.calls {
				clock.Advance(c.advance)
				fake.errs = append(fake.errs[:passed], c.err)
				_, err := b.Complete(context.Background(), Request{})
				if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
					t.Fatalf("call %d: err = %v, want %v", i, err, c.want)
				}
				if !errors.Is(err, ErrCircuitOpen) {
					passed++
				}
				if got := b.State(); got != c.state {
					t.Fatalf("call %d: state %v, want %v", i, got, c.state)
				}
			}
			if fake.calls != passed {
				t.Errorf("provider saw %d calls, %d passed the breaker", fake.calls, passed)
			}
		})
	}
}

// Half-open lets exactly one probe through; concurrent callers are refused until
// it finishes.
func TestBreakerSingleProbe(t *testing.T) {
	clock := modeltest.NewClock()
	fake := &fakeClient{errs: []error{e500}}
	b := NewBreaker(fake, "p", BreakerPolicy{Threshold: 1, CoolDown: time.Second, Clock: clock})
	if _, err := b.Complete(context.Background(), Request{}); !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	fake.block = make(chan struct{})
	probeDone := make(chan error)
	go func() {
		_, err := b.Complete(context.Background(), Request{})
		probeDone <- err
	}()
	for { // wait until the probe is inside the provider
		fake.mu.Lock()
		n := fake.calls
		fake.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() {
		_, err := b.Complete(context.Background(), Request{})
		second <- err
	}()
	var err error
	select {
	case err = <-second:
	case <-time.After(time.Minute):
		close(fake.block) // let both finish before failing
		<-probeDone
		t.Fatalf("a second caller got through while the probe was in flight")
	}
	var coe *CircuitOpenError
	if !errors.As(err, &coe) || coe.RetryIn != 0 {
		t.Fatalf("second caller during the probe: %v, want CircuitOpenError with RetryIn 0", err)
	}
	close(fake.block)
	if err := <-probeDone; err != nil {
		t.Fatalf("probe: %v", err)
	}
	if b.State() != Closed {
		t.Errorf("state %v after a good probe", b.State())
	}
}

// A probe the caller cancels says nothing about the provider: the circuit stays
// half-open and the next caller probes.
func TestBreakerCancelledProbe(t *testing.T) {
	clock := modeltest.NewClock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fake := &fakeClient{errs: []error{e500, context.Canceled}}
	b := NewBreaker(fake, "p", BreakerPolicy{Threshold: 1, CoolDown: time.Second, Clock: clock})
	b.Complete(context.Background(), Request{})
	clock.Advance(time.Second)
	if _, err := b.Complete(ctx, Request{}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if b.State() != HalfOpen {
		t.Fatalf("state %v after a cancelled probe, want half-open", b.State())
	}
	if _, err := b.Complete(context.Background(), Request{}); err != nil {
		t.Fatalf("next probe: %v", err)
	}
}

// Inside Retry, an open circuit stops the retries at once.
func TestBreakerInsideRetry(t *testing.T) {
	clock := modeltest.NewClock()
	fake := &fakeClient{errs: []error{e500, e500, e500, e500, e500}}
	c := NewRetry(NewBreaker(fake, "p", BreakerPolicy{Threshold: 2, CoolDown: time.Hour, Clock: clock}),
		RetryPolicy{MaxAttempts: 5, Clock: clock, Rand: modeltest.FixedRand{}})
	_, err := c.Complete(context.Background(), Request{})
	if !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("err = %v, want ErrCircuitOpen", err)
	}
	if fake.calls != 2 {
		t.Errorf("provider called %d times, want 2 (then the circuit opened)", fake.calls)
	}
}
