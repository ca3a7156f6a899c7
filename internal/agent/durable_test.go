package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/taint"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestStaleDriverIsFenced: a driver presumed dead while still running (a hung
// process whose session was resumed elsewhere) must not run another tool once a
// newer driver took the session. The newer one is made at the stale driver's
// effect-before point of step 5; that call's intent was committed before, so
// it runs, but the next append (its result) is refused and nothing further runs.
func TestStaleDriverIsFenced(t *testing.T) {
	dir := t.TempDir()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r, w := newMemWork(t, filepath.Join(t.TempDir(), "ledger"))
	var newer *journal.Driver
	steps := 0
	hook := func(p string) {
		if strings.HasPrefix(p, "effect-before:") {
			if steps++; steps == 5 {
				if newer, err = other.Acquire(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	res, log, err := RunDurable(context.Background(), s, w, Options{Goal: "long", Policy: &Scripted{Mode: ModeLong}, Tools: r},
		trace.LogOptions{Session: "s-fence", Clock: fixedClock()}, hook)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopJournal || !errors.Is(log.Halted(), journal.ErrFenced) {
		t.Fatalf("the stale driver ended with %s (%s), halted %v; want journal_error, fenced", res.StopReason, res.Detail, log.Halted())
	}
	if steps != 5 || w.writes != 3 { // item0 written and patched, item1 written: the 5th call (a read) ran, nothing after
		t.Fatalf("the stale driver ran %d calls (%d writes) after the fence, want 5 (3)", steps, w.writes)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if pend := st.Pending(); len(pend) != 1 || st.End != nil {
		t.Fatalf("the journal after the fence: %d pending calls, end %v; want the 5th call open, no end", len(pend), st.End)
	}
	if newer.Epoch() != 2 {
		t.Fatalf("the newer driver has epoch %d", newer.Epoch())
	}
}

// TestResumeKeepsTaint: a session that read a secret before its driver died
// must be as tainted after resume, or a crash would launder the taint that
// stops its sends (seed 004's combined attack, resumed).
func TestResumeKeepsTaint(t *testing.T) {
	dir := t.TempDir()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	log := trace.NewLog(trace.LogOptions{Session: "s-taint", Journal: d})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-taint", Goal: "g"})
	log.Emit(trace.TaintAdded, 1, "call_1", trace.TaintInfo{Labels: []taint.Label{{Class: "credential", Source: "fs.read:.env", Rule: "api-key"}}})
	perms, err := NewPermissions(PermissionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r, w := newMemWork(t, filepath.Join(t.TempDir(), "ledger"))
	res, _, err := RunDurable(context.Background(), s, w, Options{Goal: "g", Policy: &Sequence{}, Tools: r, Permissions: perms},
		trace.LogOptions{Clock: fixedClock()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopPolicy || !perms.Taint.Tainted() {
		t.Fatalf("resumed: %s, tainted %t; want policy_stop and tainted", res.StopReason, perms.Taint.Tainted())
	}
}

// TestResumeKeepsWallSpent: the wall time a session's earlier drivers ran is
// spent: resuming one that used 2 s of a 1 s budget stops at once as
// budget_exhausted, where before a crash gave it a whole new budget. With the
// budget not used up the same resume goes on.
func TestResumeKeepsWallSpent(t *testing.T) {
	for _, tc := range []struct {
		wall      time.Duration
		exhausted bool
	}{{time.Second, true}, {time.Hour, false}} {
		dir := t.TempDir()
		s, err := journal.Open(dir, journal.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().Add(-time.Minute)
		times := []time.Time{t0, t0.Add(2 * time.Second)}
		log := trace.NewLog(trace.LogOptions{Session: "s-wall", Journal: d, Clock: func() time.Time { at := times[0]; times = times[1:]; return at }})
		log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-wall", Goal: "g"})
		log.Emit(trace.TurnStarted, 1, "", trace.TurnStart{})
		r, w := newMemWork(t, filepath.Join(t.TempDir(), "ledger"))
		res, _, err := RunDurable(context.Background(), s, w, Options{Goal: "g", Policy: &Sequence{}, Tools: r,
			Limits: Limits{MaxWall: tc.wall}}, trace.LogOptions{Clock: fixedClock()}, nil)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := res.StopReason == StopBudgetExhausted; got != tc.exhausted {
			t.Errorf("budget %v after 2 s spent: %s (%s)", tc.wall, res.StopReason, res.Detail)
		}
	}
}
