package model

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/google/go-cmp/cmp"
)

func TestRetry(t *testing.T) {
	ok := step{file: "openai/text.json"}
	antOK := step{file: "anthropic/text.json"}
	policy := RetryPolicy{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: 10 * time.Second, MaxTotalDelay: 30 * time.Second}
	cases := []struct {
		name      string
		anthropic bool
		stream    bool
		steps     []step
		policy    RetryPolicy
		frac      float64 // where the jitter falls in its range
		wantSleep []time.Duration
		wantErr   error // nil: success
		giveUp    bool  // the error is a *RetryError
	}{
		{name: "429 honours Retry-After seconds", frac: 0, policy: policy,
			steps:     []step{{status: 429, file: "openai/error_429.json", header: map[string]string{"Retry-After": "7"}}, ok},
			wantSleep: []time.Duration{7 * time.Second}},
		{name: "429 honours Retry-After as an HTTP date", frac: 0, policy: policy,
			steps:     []step{{status: 429, file: "openai/error_429.json", header: map[string]string{"Retry-After": "Thu, 01 Jan 2026 00:00:05 GMT"}}, ok},
			wantSleep: []time.Duration{5 * time.Second}},
		{name: "jitter above Retry-After wins", frac: 1, policy: RetryPolicy{BaseDelay: 8 * time.Second, MaxDelay: 10 * time.Second},
			steps:     []step{{status: 429, file: "openai/error_429.json", header: map[string]string{"Retry-After": "2"}}, ok},
			wantSleep: []time.Duration{8 * time.Second}},
		{name: "500 then success", frac: 1, policy: policy,
			steps:     []step{{status: 500, file: "openai/error_500.json"}, ok},
			wantSleep: []time.Duration{time.Second}},
		{name: "full jitter can wait nothing", frac: 0, policy: policy,
			steps:     []step{{status: 502, body: "bad gateway"}, ok},
			wantSleep: []time.Duration{0}},
		{name: "network error then success", frac: 1, policy: policy,
			steps:     []step{{hangup: true}, ok},
			wantSleep: []time.Duration{time.Second}},
		{name: "529 overloaded then success (Anthropic)", anthropic: true, frac: 1, policy: policy,
			steps:     []step{{status: 529, file: "anthropic/error_529.json"}, {status: 529, file: "anthropic/error_529.json"}, antOK},
			wantSleep: []time.Duration{time.Second, 2 * time.Second}},
		{name: "overloaded mid-stream then success (Anthropic)", anthropic: true, stream: true, frac: 1, policy: policy,
			steps:     []step{{file: "anthropic/stream_overloaded.sse"}, {file: "anthropic/stream_text.sse"}},
			wantSleep: []time.Duration{time.Second}},
		{name: "backoff doubles and is capped; attempts run out", frac: 1,
			policy:    RetryPolicy{MaxAttempts: 5, BaseDelay: 3 * time.Second, MaxDelay: 10 * time.Second, MaxTotalDelay: time.Minute},
			steps:     []step{{status: 503, body: "{}"}, {status: 503, body: "{}"}, {status: 503, body: "{}"}, {status: 503, body: "{}"}, {status: 503, body: "{}"}},
			wantSleep: []time.Duration{3 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second},
			wantErr:   ErrUnavailable, giveUp: true},
		{name: "total delay runs out", frac: 1,
			policy:    RetryPolicy{MaxAttempts: 10, BaseDelay: 4 * time.Second, MaxDelay: 10 * time.Second, MaxTotalDelay: 13 * time.Second},
			steps:     []step{{status: 500, body: "{}"}, {status: 500, body: "{}"}, {status: 500, body: "{}"}},
			wantSleep: []time.Duration{4 * time.Second, 8 * time.Second},
			wantErr:   ErrUnavailable, giveUp: true},
		{name: "Retry-After beyond MaxDelay stops at once", policy: policy,
			steps:   []step{{status: 429, file: "openai/error_429.json", header: map[string]string{"Retry-After": "3600"}}},
			wantErr: ErrRateLimited, giveUp: true},
		{name: "401 is never retried", policy: policy,
			steps: []step{{status: 401, file: "openai/error_401.json"}}, wantErr: ErrAuth},
		{name: "403 is never retried", anthropic: true, policy: policy,
			steps: []step{{status: 403, body: `{"type":"error","error":{"type":"permission_error","message":"no"}}`}}, wantErr: ErrAuth},
		{name: "400 is never retried", policy: policy,
			steps: []step{{status: 400, body: `{"error":{"message":"bad","type":"invalid_request_error"}}`}}, wantErr: ErrBadRequest},
		{name: "404 is never retried", policy: policy,
			steps: []step{{status: 404, file: "openai/error_404_ollama.json"}}, wantErr: ErrBadRequest},
		{name: "context overflow is not retried here", policy: policy,
			steps: []step{{status: 400, file: "openai/error_context_openai.json"}}, wantErr: ErrContextOverflow},
		{name: "malformed body is not retried", policy: policy,
			steps: []step{{file: "openai/malformed_body.json"}}, wantErr: ErrBadResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer(t, tc.steps...)
			var log metaLog
			clock := modeltest.NewClock()
			var inner Client = newTestOpenAIClock(t, srv.srv.URL, tc.stream, &log, clock)
			if tc.anthropic {
				inner = newTestAnthropicClock(t, srv.srv.URL, tc.stream, &log, clock)
			}
			p := tc.policy
			p.Clock, p.Rand = clock, modeltest.FixedRand{Frac: tc.frac}
			var events []RetryEvent
			p.OnRetry = func(e RetryEvent) { events = append(events, e) }
			_, err := NewRetry(inner, p).Complete(context.Background(), simpleRequest("gpt-4.1"))
			if tc.wantErr == nil && err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var re *RetryError
			if gotGiveUp := errors.As(err, &re); gotGiveUp != tc.giveUp {
				t.Errorf("RetryError = %v, want %v (err %v)", gotGiveUp, tc.giveUp, err)
			}
			if diff := cmp.Diff(tc.wantSleep, clock.Sleeps()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			if got := len(srv.requests()); got != len(tc.steps) {
				t.Errorf("%d requests, want %d", got, len(tc.steps))
			}
			if len(events) != len(tc.wantSleep) {
				t.Errorf("%d retry events for %d waits", len(events), len(tc.wantSleep))
			}
			for i, e := range events {
				if e.Attempt != i+1 || e.Backoff != tc.wantSleep[i] || e.ErrorClass == "" {
					t.Errorf("event %d = %+v", i, e)
				}
			}
			// Every response is accounted for with its attempt number (an attempt
			// that got no response has no record).
			last := 0
			for _, m := range log.all() {
				if m.Attempt <= last || m.Attempt > len(tc.steps) {
					t.Errorf("records out of order: attempt %d after %d", m.Attempt, last)
				}
				last = m.Attempt
			}
			if last != len(tc.steps) {
				t.Errorf("last record is attempt %d, want %d", last, len(tc.steps))
			}
		})
	}
}

// Retry must not sleep past the caller's deadline only to fail.
func TestRetryStopsBeforeDeadline(t *testing.T) {
	srv := newFixtureServer(t, step{status: 503, body: "{}"})
	clock := modeltest.NewClock()
	c := NewRetry(newTestOpenAI(t, srv.srv.URL, false, nil),
		RetryPolicy{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second, Clock: clock, Rand: modeltest.FixedRand{Frac: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Complete(ctx, simpleRequest("gpt-4.1"))
	var re *RetryError
	if !errors.As(err, &re) || re.Reason != "deadline before the next attempt" {
		t.Fatalf("err = %v, want a RetryError for the deadline", err)
	}
	if len(clock.Sleeps()) != 0 {
		t.Errorf("slept %v", clock.Sleeps())
	}
}

// A cancelled context ends the retries and is reported as cancellation, not as
// the provider's fault.
func TestRetryCancelled(t *testing.T) {
	srv := newFixtureServer(t, step{status: 503, body: "{}"})
	ctx, cancel := context.WithCancel(context.Background())
	clock := &cancelClock{Clock: modeltest.NewClock(), cancel: cancel}
	_, err := NewRetry(newTestOpenAI(t, srv.srv.URL, false, nil), RetryPolicy{Clock: clock}).Complete(ctx, simpleRequest("gpt-4.1"))
	if !errors.Is(err, context.Canceled) || ErrorClass(err) != "canceled" {
		t.Fatalf("err = %v (class %q), want context.Canceled", err, ErrorClass(err))
	}
}

// cancelClock cancels the context when asked to sleep.
type cancelClock struct {
	*modeltest.Clock
	cancel func()
}

func (c *cancelClock) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel()
	return c.Clock.Sleep(ctx, d)
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "30"}, 30 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"date", map[string]string{"Retry-After": "Thu, 01 Jan 2026 00:01:00 GMT"}, time.Minute},
		{"date in the past", map[string]string{"Retry-After": "Wed, 31 Dec 2025 23:00:00 GMT"}, 0},
		{"milliseconds first", map[string]string{"retry-after-ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"huge is capped", map[string]string{"Retry-After": "1e300"}, maxRetryAfter},
		{"huge ms is capped", map[string]string{"retry-after-ms": "1e300"}, maxRetryAfter},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Errorf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
