package journal

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/taint"
	"github.com/agentbox/agentbox/internal/trace"
)

func sameState(a, b *State) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// payloadEvent is an event of type typ carrying v, for numbered.
func payloadEvent(typ trace.Type, v any) trace.Event {
	b, _ := json.Marshal(v)
	return trace.Event{Type: typ, Data: b}
}

// numbered gives evs the seqs 1, 2, ….
func numbered(evs ...trace.Event) []trace.Event {
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	return evs
}

// foldsFromAnySnapshot fails unless a snapshot (through its JSON) of the fold
// of a random prefix of evs, with a random overlap redelivered and then the
// tail applied, is full, the fold of all of them.
func foldsFromAnySnapshot(t *rapid.T, evs []trace.Event, full *State) {
	k := rapid.IntRange(0, len(evs)).Draw(t, "watermark")
	pre, _ := Fold(evs[:k])
	b, _ := json.Marshal(pre)
	snap := NewState()
	if err := json.Unmarshal(b, snap); err != nil {
		t.Fatal(err)
	}
	from := rapid.IntRange(0, k).Draw(t, "redeliver")
	for _, e := range evs[from:] {
		if err := snap.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	if !sameState(full, snap) {
		t.Fatalf("snapshot at %d + tail from %d differs from the full fold", k, from)
	}
}

// TestFoldIdempotent: folding a log is the same as folding a snapshot of any
// prefix (through its JSON) and then the tail; events delivered again, or a
// prefix replayed twice, change nothing.
func TestFoldIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "events")
		mem := &trace.Memory{}
		log := trace.NewLog(trace.LogOptions{Session: "s-test", Sinks: []trace.Sink{mem}})
		for i := 0; i < n; i++ {
			emitStep(log, i)
		}
		evs := mem.Events()
		full, err := Fold(evs)
		if err != nil {
			t.Fatal(err)
		}
		foldsFromAnySnapshot(t, evs, full)
		again, _ := Fold(evs)
		if err := full.Apply(evs[rapid.IntRange(0, n-1).Draw(t, "again")]); err != nil || !sameState(full, again) {
			t.Fatalf("re-applying an event changed the state: %v", err)
		}
	})
}

func TestFoldInvariants(t *testing.T) {
	mk := func(typ trace.Type, call string, v any) trace.Event {
		b, _ := json.Marshal(v)
		return trace.Event{Type: typ, CallID: call, Data: b, Step: 1}
	}
	seq := func(evs ...trace.Event) []trace.Event {
		for i := range evs {
			evs[i].Seq = int64(i + 1)
		}
		return evs
	}
	created := mk(trace.SessionCreated, "", trace.SessionInfo{Session: "s"})
	prop := mk(trace.ToolCallProposed, "c1", trace.Decision{Tool: "fs.read"})
	fin := mk(trace.ToolExecutionFinished, "c1", trace.ToolFinish{})
	for name, evs := range map[string][]trace.Event{
		"two results":             seq(created, prop, fin, fin),
		"result without its call": seq(created, fin),
		"started twice":           seq(created, prop, mk(trace.ToolExecutionStarted, "c1", trace.ToolStart{}), mk(trace.ToolExecutionStarted, "c1", trace.ToolStart{})),
		"reconciled after result": seq(created, prop, fin, mk(trace.RecoveryReconciled, "c1", trace.Reconcile{Outcome: "retried"})),
		"event after the end":     seq(created, mk(trace.SessionEnded, "", trace.SessionEnd{}), prop),
		"a second session":        seq(created, created),
		"a gap":                   {created, func() trace.Event { e := prop; e.Seq = 3; return e }()},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Fold(evs); err == nil {
				t.Fatal("folded without an error")
			}
		})
	}
}

// TestFoldWall: a session's wall time is the time between its events, less the
// gap before each recovery event (no driver ran then); a snapshot keeps it.
func TestFoldWall(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := []time.Duration{0, time.Second, 3 * time.Second, 100 * time.Second, 102 * time.Second}
	i := 0
	mem := &trace.Memory{}
	log := trace.NewLog(trace.LogOptions{Session: "s-wall", Sinks: []trace.Sink{mem},
		Clock: func() time.Time { d := at[i]; i++; return t0.Add(d) }})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-wall", Goal: "g"})
	log.Emit(trace.TurnStarted, 1, "", trace.TurnStart{})
	log.Emit(trace.TurnStarted, 2, "", trace.TurnStart{})
	log.Emit(trace.RecoveryStarted, 2, "", trace.RecoveryStart{}) // the driver died for 97 s
	log.Emit(trace.TurnStarted, 3, "", trace.TurnStart{})
	evs := mem.Events()
	st, err := Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	if want := 5 * time.Second; st.Wall != want {
		t.Fatalf("wall %v, want %v", st.Wall, want)
	}
	pre, _ := Fold(evs[:2])
	b, _ := json.Marshal(pre)
	snap := NewState()
	if err := json.Unmarshal(b, snap); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[2:] {
		if err := snap.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	if snap.Wall != st.Wall {
		t.Fatalf("from a snapshot: wall %v, want %v", snap.Wall, st.Wall)
	}
}

// TestFoldApprovals: a request is awaiting from ApprovalRequested to its
// ApprovalResolved, its call is held meanwhile, the grants it gave stay with
// the state, and a one-time grant goes once its call has a result. A request
// asked twice, or resolved without being asked, breaks the fold.
func TestFoldApprovals(t *testing.T) {
	mem := &trace.Memory{}
	log := trace.NewLog(trace.LogOptions{Session: "s-test", Sinks: []trace.Sink{mem}})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-test", Goal: "g"})
	log.Emit(trace.TurnStarted, 1, "", trace.TurnStart{})
	log.Emit(trace.ToolCallProposed, 1, "call_1", trace.Decision{Tool: "ledger.append"})
	log.Emit(trace.ToolExecutionStarted, 1, "call_1", trace.ToolStart{Tool: "ledger.append"})
	log.Emit(trace.ApprovalRequested, 1, "call_1", grant.Request{ID: "req_1"})
	evs := mem.Events()
	st, err := Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := st.Held("call_1"); !ok || a.Request.ID != "req_1" || st.Requested != 1 {
		t.Fatalf("after ApprovalRequested: held %v %+v, requested %d", ok, a, st.Requested)
	}
	log.Emit(trace.ApprovalResolved, 1, "call_1", trace.ApprovalResolution{Answer: grant.Answer{Request: "req_1"},
		Grants: []grant.Grant{{ID: "g-1", Exact: "tool:ledger.append", Call: "call_1"}, {ID: "g-2", Capability: "write:src/**"}}})
	log.Emit(trace.ToolExecutionFinished, 1, "call_1", trace.ToolFinish{})
	st, err = Fold(mem.Events())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Held("call_1"); ok || len(st.Grants) != 1 || st.Grants[0].ID != "g-2" {
		t.Fatalf("after the call ran: held %v, grants %+v; want g-2 only", ok, st.Grants)
	}
	again := append(evs[:len(evs):len(evs)], evs[len(evs)-1])
	again[len(again)-1].Seq++
	if _, err := Fold(again); !errors.Is(err, ErrInvariant) {
		t.Fatalf("a request asked twice: %v", err)
	}
	b, _ := json.Marshal(trace.ApprovalResolution{Answer: grant.Answer{Request: "req_7"}})
	stray := append(evs[:len(evs):len(evs)], trace.Event{Seq: int64(len(evs) + 1), Type: trace.ApprovalResolved, CallID: "call_1", Data: b})
	if _, err := Fold(stray); !errors.Is(err, ErrInvariant) {
		t.Fatalf("a request resolved but never asked: %v", err)
	}
}

// TestFoldSubagentTaint: what a subagent read taints the session's state, so a
// driver that dies while a subagent runs resumes as tainted as it was: a crash
// does not launder a delegation's taint.
func TestFoldSubagentTaint(t *testing.T) {
	mem := &trace.Memory{}
	log := trace.NewLog(trace.LogOptions{Session: "s-test", Sinks: []trace.Sink{mem}})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-test", Goal: "g"})
	sub := &trace.Memory{}
	child := trace.NewLog(trace.LogOptions{Session: "s-test.sub1", Sinks: []trace.Sink{sub}})
	child.Emit(trace.TaintAdded, 1, "call_1", trace.TaintInfo{Labels: []taint.Label{{Class: "secret", Source: "file:.env", Rule: "sensitive:read"}}})
	for _, e := range sub.Events() {
		log.Emit(trace.SubagentEvent, 1, "call_1", trace.SubagentRecord{Session: "s-test.sub1", Event: e})
	}
	st, err := Fold(mem.Events())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Taint) != 1 || st.Taint[0].Source != "file:.env" {
		t.Fatalf("taint after a subagent's read: %+v", st.Taint)
	}
}
