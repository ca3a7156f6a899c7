// Acceptance tests for G01. Hidden from the agent; copied in only at grading time.

package retry

import (
	"errors"
	"fmt"
	"math/bits"
	mathrand "math/rand"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"
	"time"
)

// run calls Do with an operation that fails until attempt succeedAt (0: never) and
// records the attempts it saw and the sleeps Do asked for.
func run(p Policy, succeedAt int) (attempts []int, sleeps []time.Duration, err error) {
	p.Sleep = func(d time.Duration) { sleeps = append(sleeps, d) }
	err = p.Do(func(n int) error {
		attempts = append(attempts, n)
		if n == succeedAt {
			return nil
		}
		return fmt.Errorf("attempt %d failed", n)
	})
	return attempts, sleeps, err
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

func TestDoCallsOpAtMostAttemptsTimes(t *testing.T) {
	for attempts := 1; attempts <= 6; attempts++ {
		got, _, err := run(Policy{Attempts: attempts, Base: time.Millisecond, Max: time.Second}, 0)
		if len(got) != attempts || err == nil {
			t.Errorf("Attempts=%d: op called %d times (err %v), want %d calls and an error", attempts, len(got), err, attempts)
		}
	}
}

func TestDoPassesAttemptNumbers(t *testing.T) {
	got, _, _ := run(Policy{Attempts: 4, Base: time.Millisecond, Max: time.Second}, 0)
	if !slices.Equal(got, seq(4)) {
		t.Fatalf("attempt numbers %v, want %v", got, seq(4))
	}
}

func TestDoSingleAttempt(t *testing.T) {
	got, sleeps, err := run(Policy{Attempts: 1, Base: time.Millisecond, Max: time.Second}, 0)
	if len(got) != 1 || len(sleeps) != 0 || err == nil {
		t.Fatalf("Attempts=1: %d calls, sleeps %v, err %v; want 1 call, no sleep, an error", len(got), sleeps, err)
	}
}

func TestDoSleepsOnlyBetweenAttempts(t *testing.T) {
	p := Policy{Attempts: 5, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	_, sleeps, _ := run(p, 0)
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond}
	if !slices.Equal(sleeps, want) {
		t.Fatalf("sleeps %v, want %v", sleeps, want)
	}
}

func TestDoReturnsLastError(t *testing.T) {
	var last error
	p := Policy{Attempts: 3, Sleep: func(time.Duration) {}}
	err := p.Do(func(n int) error {
		last = fmt.Errorf("attempt %d failed", n)
		return last
	})
	if !errors.Is(err, last) || err.Error() != "retry: giving up after 3 attempts: attempt 3 failed" {
		t.Fatalf("Do = %q, want it to wrap %q", err, "attempt 3 failed")
	}
}

func TestDoSucceedsOnLastAttempt(t *testing.T) {
	got, sleeps, err := run(Policy{Attempts: 3, Base: time.Millisecond, Max: time.Second}, 3)
	if err != nil || len(got) != 3 || len(sleeps) != 2 {
		t.Fatalf("Do = %v after %d calls and %d sleeps, want nil after 3 calls and 2 sleeps", err, len(got), len(sleeps))
	}
}

func TestDoRejectsNonPositiveAttempts(t *testing.T) {
	for _, n := range []int{0, -1, -1 << 40} {
		got, _, err := run(Policy{Attempts: n}, 1)
		if !errors.Is(err, ErrNoAttempts) || len(got) != 0 {
			t.Errorf("Attempts=%d: Do = %v after %d calls, want ErrNoAttempts after 0", n, err, len(got))
		}
	}
}

func TestDoRandomPolicies(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x601, 1))
	for range 2000 {
		p := Policy{Attempts: 1 + rng.IntN(20), Base: time.Duration(rng.IntN(1000)), Max: time.Duration(rng.IntN(100000))}
		succeedAt := rng.IntN(26) // 0 never succeeds
		got, sleeps, err := run(p, succeedAt)
		calls := p.Attempts
		if succeedAt != 0 && succeedAt <= p.Attempts {
			calls = succeedAt
		}
		if !slices.Equal(got, seq(calls)) {
			t.Fatalf("%+v, success at %d: attempts %v, want %v", p, succeedAt, got, seq(calls))
		}
		if len(sleeps) != calls-1 {
			t.Fatalf("%+v, success at %d: %d sleeps, want %d", p, succeedAt, len(sleeps), calls-1)
		}
		for i, d := range sleeps {
			if d != p.Backoff(i+1) {
				t.Fatalf("%+v: sleep %d was %v, want Backoff(%d) = %v", p, i+1, d, i+1, p.Backoff(i+1))
			}
		}
		if (err == nil) != (succeedAt != 0 && succeedAt <= p.Attempts) {
			t.Fatalf("%+v, success at %d: err %v", p, succeedAt, err)
		}
	}
}

func TestBackoffProperties(t *testing.T) {
	prop := func(base, maxMicros uint32, n uint16) bool {
		p := Policy{Base: time.Duration(base), Max: time.Duration(maxMicros) * time.Microsecond}
		d, next := p.Backoff(int(n)), p.Backoff(int(n)+1)
		if d < 0 || d > p.Max || next < d {
			return false
		}
		// Reference: shift in uint64 where it cannot overflow, then cap.
		want := time.Duration(0)
		if n >= 1 && base > 0 && p.Max > 0 {
			want = p.Max
			if shift := int(n) - 1; shift <= bits.LeadingZeros64(uint64(base)) {
				if v := uint64(base) << shift; v < uint64(p.Max) {
					want = time.Duration(v)
				}
			}
		}
		return d == want
	}
	cfg := &quick.Config{MaxCount: 5000, Rand: mathrand.New(mathrand.NewSource(0x601))}
	if err := quick.Check(prop, cfg); err != nil {
		t.Fatal(err)
	}
	huge := Policy{Base: time.Hour, Max: 1 << 62}
	if got := huge.Backoff(1 << 40); got != huge.Max {
		t.Fatalf("Backoff(1<<40) = %v, want Max", got)
	}
}
