package retry

import (
	"errors"
	"testing"
	"time"
)

func TestDoStopsAtFirstSuccess(t *testing.T) {
	calls := 0
	p := Policy{Attempts: 5, Base: time.Millisecond, Max: time.Second, Sleep: func(time.Duration) {}}
	err := p.Do(func(int) error {
		calls++
		if calls < 2 {
			return errors.New("transient")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("Do = %v after %d calls, want nil after 2", err, calls)
	}
}

func TestDoRejectsZeroAttempts(t *testing.T) {
	calls := 0
	err := Policy{}.Do(func(int) error { calls++; return nil })
	if !errors.Is(err, ErrNoAttempts) || calls != 0 {
		t.Fatalf("Do = %v after %d calls, want ErrNoAttempts after 0", err, calls)
	}
}

func TestBackoffDoubles(t *testing.T) {
	p := Policy{Base: 10 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 3: 40 * time.Millisecond} {
		if got := p.Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}
