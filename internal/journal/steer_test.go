package journal

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestSteerInbox: entries are numbered in order and read after a watermark,
// from another handle on the store (the person's process).
func TestSteerInbox(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	other := open(t, dir, Options{})
	for _, m := range []string{"one", "two", "three"} {
		if _, err := other.PutSteer(trace.SteerRequest{Kind: "supplement", Message: m, By: "user"}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := s.Steers(1)
	if err != nil || len(rs) != 2 || rs[0].ID != 2 || rs[0].Message != "two" || rs[1].Message != "three" || rs[0].At.IsZero() {
		t.Fatalf("steers after 1: %+v (%v)", rs, err)
	}
}

// steerLog emits a session whose steps are interleaved with steers of
// random kinds; some steers name the step's call stale, some grants are given
// under the current revision.
func steerLog(t *rapid.T) ([]trace.Event, grant.Goal, int, map[string]bool) {
	mem := &trace.Memory{}
	log := trace.NewLog(trace.LogOptions{Session: "s-steer", Sinks: []trace.Sink{mem}})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-steer", Goal: "g"})
	var goal grant.Goal
	var id int64
	steers, stale := 0, map[string]bool{}
	for step := 1; step <= rapid.IntRange(1, 12).Draw(t, "steps"); step++ {
		call := "call_" + string(rune('a'+step))
		log.Emit(trace.TurnStarted, step, "", trace.TurnStart{})
		log.Emit(trace.ToolCallProposed, step, call, trace.Decision{Tool: "fs.read", CallID: call, GoalRevision: goal.Revision})
		log.Emit(trace.ToolExecutionStarted, step, call, trace.ToolStart{Tool: "fs.read", Effect: "read"})
		if rapid.Bool().Draw(t, "asks") {
			log.Emit(trace.ApprovalRequested, step, call, grant.Request{ID: "req_" + call})
			log.Emit(trace.ApprovalResolved, step, call, trace.ApprovalResolution{Answer: grant.Answer{Request: "req_" + call},
				Grants: []grant.Grant{{ID: "g-" + call, Capability: "read:**", Revision: goal.Revision}}})
		}
		log.Emit(trace.ToolExecutionFinished, step, call, trace.ToolFinish{})
		for range rapid.IntRange(0, 2).Draw(t, "steers") {
			id++
			steers++
			k := rapid.SampledFrom([]grant.Steer{grant.Supplement, grant.Correct, grant.Replace, grant.Ask}).Draw(t, "kind")
			r := trace.SteerRequest{ID: id, Kind: string(k), Message: "m"}
			if k == grant.Ask {
				log.Emit(trace.SteerAnswered, step, "", trace.SteerAnswer{Steer: r, Revision: goal.Revision, Answer: "progress"})
				continue
			}
			goal, _ = goal.Steer(k)
			sp := trace.SafePoint{Action: trace.SafeBoundary}
			if k != grant.Supplement && rapid.Bool().Draw(t, "stale") {
				sp = trace.SafePoint{Action: trace.SafeReadCancelled, Call: call, Stale: []string{call}}
				stale[call] = true
			}
			log.Emit(trace.GoalRevised, step, sp.Call, trace.GoalRevision{Steer: r, Revision: goal.Revision, Epoch: goal.Epoch,
				Goal: "g" + string(k), SafePoint: sp})
		}
		log.Emit(trace.TurnCompleted, step, "", trace.TurnEnd{})
	}
	return mem.Events(), goal, steers, stale
}

// TestFoldSteerProperty: the fold of any steered session takes each inbox
// entry once and in order, marks stale exactly the calls named so, ends at the revision the kinds make
// (grant.Goal.Steer), holds no grant that does not fit it, and folds to the
// same state from any snapshot with any redelivered overlap.
func TestFoldSteerProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs, goal, steers, stale := steerLog(t)
		st, err := Fold(evs)
		if err != nil {
			t.Fatal(err)
		}
		if st.Goal != goal || len(st.Steers) != steers || st.Steered() != int64(steers) {
			t.Fatalf("goal %+v (want %+v), %d steers taken (want %d), last %d", st.Goal, goal, len(st.Steers), steers, st.Steered())
		}
		for _, g := range st.Grants {
			if !st.Goal.Fits(g.Revision) {
				t.Fatalf("grant %+v held at goal %+v", g, st.Goal)
			}
		}
		for id, c := range st.Calls {
			if c.Stale != stale[id] {
				t.Fatalf("call %s: stale %t, want %t", id, c.Stale, stale[id])
			}
		}
		foldsFromAnySnapshot(t, evs, st)
	})
}

// TestFoldSteerInvariants: a steer taken twice or out of order, a revision
// the kind does not make, a stale call never proposed, an answered goal
// change: each breaks the fold.
func TestFoldSteerInvariants(t *testing.T) {
	mk, seq := payloadEvent, numbered
	created := mk(trace.SessionCreated, trace.SessionInfo{Session: "s", Goal: "g"})
	rev := func(id int64, kind string, r, e int, stale ...string) trace.Event {
		return mk(trace.GoalRevised, trace.GoalRevision{Steer: trace.SteerRequest{ID: id, Kind: kind}, Revision: r, Epoch: e,
			SafePoint: trace.SafePoint{Stale: stale}})
	}
	if st, err := Fold(seq(created, rev(1, "correct", 1, 1), rev(3, "supplement", 2, 1))); err != nil || st.Goal != (grant.Goal{Revision: 2, Epoch: 1}) || st.CurrentGoal() != "g" {
		t.Fatalf("a legal log: %+v %v", st, err)
	}
	for name, evs := range map[string][]trace.Event{
		"taken twice":          seq(created, rev(1, "correct", 1, 1), rev(1, "correct", 2, 2)),
		"out of order":         seq(created, rev(2, "correct", 1, 1), rev(1, "correct", 2, 2)),
		"wrong revision":       seq(created, rev(1, "supplement", 2, 0)),
		"supplement as epoch":  seq(created, rev(1, "supplement", 1, 1)),
		"ask as a revision":    seq(created, rev(1, "ask", 1, 0)),
		"stale never proposed": seq(created, rev(1, "replace", 1, 1, "call_9")),
		"goal kind answered":   seq(created, mk(trace.SteerAnswered, trace.SteerAnswer{Steer: trace.SteerRequest{ID: 1, Kind: "replace"}})),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Fold(evs); !errors.Is(err, ErrInvariant) {
				t.Fatalf("folded: %v", err)
			}
		})
	}
}

// TestFoldCompaction: a compaction is begun, then finished with its summary;
// one finished without being begun, or begun while another is, breaks the
// fold; a new driver's RecoveryStarted discards a half-made one, which may
// then be begun again.
func TestFoldCompaction(t *testing.T) {
	mk, seq := payloadEvent, numbered
	created := mk(trace.SessionCreated, trace.SessionInfo{Session: "s", Goal: "g"})
	prop := mk(trace.ToolCallProposed, trace.Decision{Tool: "fs.read"})
	prop.CallID = "c1"
	begin := mk(trace.ContextCompacting, trace.Compaction{Through: "c1", Turns: 1})
	done := mk(trace.ContextCompacted, trace.Compaction{Through: "c1", Turns: 1, Summary: "step 1: fs.read: ok"})
	recovered := mk(trace.RecoveryStarted, trace.RecoveryStart{})
	st, err := Fold(seq(created, prop, begin, recovered, begin, done))
	if err != nil || st.Compacting != nil || st.Compaction == nil || st.Compaction.Summary == "" {
		t.Fatalf("a compaction redone after a crash: %+v pending %+v (%v)", st.Compaction, st.Compacting, err)
	}
	if st, _ := Fold(seq(created, prop, begin)); st.Compacting == nil || st.Compaction != nil {
		t.Fatalf("a half-made compaction: %+v %+v", st.Compacting, st.Compaction)
	}
	for name, evs := range map[string][]trace.Event{
		"finished, not begun": seq(created, prop, done),
		"begun twice":         seq(created, prop, begin, begin),
		"of no call":          seq(created, mk(trace.ContextCompacting, trace.Compaction{Through: "c9", Turns: 1})),
		"not growing":         seq(created, prop, begin, done, begin),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Fold(evs); !errors.Is(err, ErrInvariant) {
				t.Fatalf("folded: %v", err)
			}
		})
	}
}

// TestFoldTurnEndsRequests: a model request whose turn was cancelled (a
// reply cut for a steer) or failed is not in flight: a recovery must not
// report it as lost to a crash.
func TestFoldTurnEndsRequests(t *testing.T) {
	for _, end := range []trace.Type{trace.TurnCancelled, trace.TurnFailed} {
		mem := &trace.Memory{}
		log := trace.NewLog(trace.LogOptions{Session: "s-r", Sinks: []trace.Sink{mem}})
		log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-r", Goal: "g"})
		log.Emit(trace.TurnStarted, 1, "", trace.TurnStart{})
		log.Emit(trace.ModelRequestStarted, 1, "", trace.ModelRequest{RequestID: "s-r/m1"})
		st, _ := Fold(mem.Events())
		if len(st.Requests) != 1 {
			t.Fatalf("a request in flight: %v", st.Requests)
		}
		log.Emit(end, 1, "", trace.TurnEnd{Error: "steered"})
		if st, err := Fold(mem.Events()); err != nil || len(st.Requests) != 0 {
			t.Fatalf("after %s: requests %v (%v)", end, st.Requests, err)
		}
	}
}
