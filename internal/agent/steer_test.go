package agent

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/trace"
)

// seen is a policy that records what the policy it wraps was shown: the goal
// and the call ids of the history at each step. at, if set, runs before the
// step is decided (a person types while the model replies).
type seen struct {
	Policy
	mu      sync.Mutex
	goals   []string
	history [][]string
	plans   [][]trace.PlanItem // the plan the policy was shown at each step
	at      func(ctx context.Context, s *State) error
}

func (p *seen) Next(ctx context.Context, s *State) (Decision, error) {
	var ids []string
	for _, t := range s.History {
		ids = append(ids, t.Decision.CallID)
	}
	p.mu.Lock()
	p.goals, p.history, p.plans = append(p.goals, s.Goal), append(p.history, ids), append(p.plans, slices.Clone(s.Plan))
	p.mu.Unlock()
	if p.at != nil {
		if err := p.at(ctx, s); err != nil {
			return Decision{}, err
		}
	}
	return p.Policy.Next(ctx, s)
}

type steerRun struct {
	res    *Result
	files  map[string]string
	events []trace.Event
	state  *journal.State
	policy *seen
	perms  *Permissions
}

// runSteered runs the long session in a fresh directory; before is memWork's
// hook, given a steer function that leaves a message as another process does
// (its own handle on the store).
func runSteered(t *testing.T, before func(ctx context.Context, tool string, steer func(kind, msg string)),
	at func(ctx context.Context, s *State, steer func(kind, msg string)) error) steerRun {
	t.Helper()
	dir := t.TempDir()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	person, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	steer := func(kind, msg string) {
		if _, err := Steer(person, kind, msg, "user"); err != nil {
			t.Errorf("steer %s: %v", kind, err)
		}
	}
	r, w := newMemWork(t, filepath.Join(dir, "ledger"))
	if before != nil {
		w.before = func(ctx context.Context, tool string, _ json.RawMessage) { before(ctx, tool, steer) }
	}
	pol := &seen{Policy: &Scripted{Mode: ModeLong}}
	if at != nil {
		pol.at = func(ctx context.Context, st *State) error { return at(ctx, st, steer) }
	}
	perms := &Permissions{Grants: grant.NewSet(grant.Options{})}
	if _, err := perms.Grants.Give("write:long/**", "operator", ""); err != nil {
		t.Fatal(err)
	}
	res, _, err := RunDurable(context.Background(), s, w, Options{Goal: "long", Policy: pol, Tools: r, Permissions: perms},
		trace.LogOptions{Session: "s-steer", Clock: fixedClock()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	return steerRun{res: res, files: w.files, events: evs, state: st, policy: pol, perms: perms}
}

func eventsOf[T any](t *testing.T, evs []trace.Event, typ trace.Type) []T {
	var out []T
	for _, e := range evs {
		if e.Type == typ {
			var v T
			if err := json.Unmarshal(e.Data, &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

// once returns a hook that runs f at the n-th start of tool (1-based).
func once(tool string, n int, f func(ctx context.Context, steer func(kind, msg string))) func(context.Context, string, func(string, string)) {
	count := 0
	return func(ctx context.Context, name string, steer func(string, string)) {
		if name != tool {
			return
		}
		if count++; count == n {
			f(ctx, steer)
		}
	}
}

// TestSteerKinds steers the long session once with each kind, while a tool
// runs or the model replies, and checks the safe point taken (seed 004), the
// goal revision, the grants, what the policy was shown afterwards, and that the
// session still converges to the unsteered run's workspace.
func TestSteerKinds(t *testing.T) {
	ref := runSteered(t, nil, nil)
	if ref.res.StopReason != StopDone || len(ref.files) != LongItems {
		t.Fatalf("unsteered: %s (%s)", ref.res.StopReason, ref.res.Detail)
	}
	cases := []struct {
		name   string
		before func(context.Context, string, func(string, string))
		at     func(context.Context, *State, func(string, string)) error
		kind   string
		action string
		rev    grant.Goal
		stale  bool // the call in flight is stale and not shown again
		grants int  // held after
	}{
		{name: "ask", kind: "ask", before: once("fs.read", 2, func(_ context.Context, steer func(string, string)) { steer("ask", "how far are you?") })},
		{name: "supplement", kind: "supplement", action: trace.SafeBoundary, rev: grant.Goal{Revision: 1}, grants: 1,
			before: once("fs.read", 2, func(_ context.Context, steer func(string, string)) { steer("supplement", "also keep the files short") })},
		{name: "correct during a read", kind: "correct", action: trace.SafeReadCancelled, rev: grant.Goal{Revision: 1, Epoch: 1}, stale: true,
			before: once("fs.read", 2, func(ctx context.Context, steer func(string, string)) {
				steer("correct", "not item1, item2 first")
				<-ctx.Done() // a long read: cancelled at once, or the test hangs
			})},
		{name: "correct after a write", kind: "correct", action: trace.SafeWriteRolledBack, rev: grant.Goal{Revision: 1, Epoch: 1}, stale: true,
			before: once("fs.write", 3, func(_ context.Context, steer func(string, string)) { steer("correct", "write item2 differently") })},
		{name: "replace during a test run", kind: "replace", action: trace.SafeAwaited, rev: grant.Goal{Revision: 1, Epoch: 1}, stale: true,
			before: once("test.run", 1, func(_ context.Context, steer func(string, string)) { steer("replace", "just finish the items") })},
		{name: "replace while the model replies", kind: "replace", action: trace.SafeStreamCancelled, rev: grant.Goal{Revision: 1, Epoch: 1},
			at: func() func(context.Context, *State, func(string, string)) error {
				done := false
				return func(ctx context.Context, s *State, steer func(string, string)) error {
					if s.Step() != 5 || done {
						return nil
					}
					done = true
					steer("replace", "just finish the items")
					<-ctx.Done() // a long reply: cancelled at once
					return context.Cause(ctx)
				}
			}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runSteered(t, tc.before, tc.at)
			if r.res.StopReason != StopDone || !maps.Equal(r.files, ref.files) {
				t.Fatalf("steered: %s (%s), files equal %t", r.res.StopReason, r.res.Detail, maps.Equal(r.files, ref.files))
			}
			if len(r.state.Steers) != 1 || r.state.Steers[0].Kind != tc.kind {
				t.Fatalf("steers taken: %+v", r.state.Steers)
			}
			// The step trace shows the choice made.
			proj := trace.NewProjector(nil)
			for _, e := range r.events {
				proj.Append(e)
			}
			var shown []trace.StepSteer
			for _, s := range proj.Steps() {
				shown = append(shown, s.Steers...)
			}
			if len(shown) != 1 || shown[0].Kind != tc.kind || shown[0].SafePoint != tc.action || (tc.kind == "ask") != (shown[0].Answer != "") {
				t.Fatalf("the step trace shows steers %+v", shown)
			}
			if got := len(r.perms.Grants.List()); got != tc.grants && tc.kind != "ask" {
				t.Fatalf("%d grants held, want %d", got, tc.grants)
			}
			if tc.kind == "ask" {
				ans := eventsOf[trace.SteerAnswer](t, r.events, trace.SteerAnswered)
				if len(ans) != 1 || !strings.Contains(ans[0].Answer, "The goal is unchanged") || !strings.Contains(ans[0].Answer, "tool calls so far") ||
					r.state.Goal != (grant.Goal{}) || len(eventsOf[trace.GoalRevision](t, r.events, trace.GoalRevised)) != 0 ||
					len(r.perms.Grants.List()) != 1 {
					t.Fatalf("ask: answers %+v, goal %+v", ans, r.state.Goal)
				}
				return
			}
			revs := eventsOf[trace.GoalRevision](t, r.events, trace.GoalRevised)
			if len(revs) != 1 {
				t.Fatalf("%d GoalRevised", len(revs))
			}
			g := revs[0]
			if g.SafePoint.Action != tc.action || g.Revision != tc.rev.Revision || g.Epoch != tc.rev.Epoch || r.state.Goal != tc.rev {
				t.Fatalf("GoalRevised %+v, state goal %+v; want %s at %+v", g, r.state.Goal, tc.action, tc.rev)
			}
			if tc.grants == 0 && len(g.Dropped) != 1 {
				t.Fatalf("dropped grants %v, want the operator's", g.Dropped)
			}
			// The goal the policy sees from then on is the steered one.
			last := r.policy.goals[len(r.policy.goals)-1]
			if want := r.state.CurrentGoal(); last != want || (tc.kind == "replace" && last != "just finish the items") ||
				(tc.kind != "replace" && !strings.HasPrefix(last, "long\n\n")) {
				t.Fatalf("the policy last saw goal %q, the state's is %q", last, want)
			}
			checkPlanSteered(t, r, g, tc.rev)
			// Every call decided after the steer carries the new revision.
			for _, e := range r.events {
				if e.Type != trace.ToolCallProposed || e.Seq < revSeq(r.events) {
					continue
				}
				var d trace.Decision
				json.Unmarshal(e.Data, &d)
				if d.GoalRevision != tc.rev.Revision {
					t.Fatalf("call %s after the steer decided under revision %d", e.CallID, d.GoalRevision)
				}
			}
			if !tc.stale {
				return
			}
			stale := g.SafePoint.Stale
			if len(stale) != 1 || stale[0] != g.SafePoint.Call || !r.state.Calls[stale[0]].Stale || r.state.Calls[stale[0]].Result == nil {
				t.Fatalf("stale %v (call %q): its result must be recorded and marked stale", stale, g.SafePoint.Call)
			}
			for i, h := range r.policy.history {
				if slices.Contains(h, stale[0]) {
					t.Fatalf("step %d: the policy was shown the stale result of %s", i+1, stale[0])
				}
			}
			if tc.action == trace.SafeWriteRolledBack {
				sp := g.SafePoint
				if sp.Base == sp.Result || sp.Now != sp.Base || sp.Effect == nil || sp.Effect.Version != sp.Base {
					t.Fatalf("rollback: base %s result %s now %s effect %+v", sp.Base, sp.Result, sp.Now, sp.Effect)
				}
			}
			if tc.action == trace.SafeReadCancelled && !strings.Contains(g.SafePoint.Detail, "was cancelled") {
				t.Fatalf("the read was not cancelled: %s", g.SafePoint.Detail)
			}
		})
	}
}

// checkPlanSteered: the long session's plan, made before the steer g, is
// kept by a supplement; a correction or a replacement leaves each of its
// items behind as stale (named in GoalRevised, kept in the fold) and the
// policy, shown none of them, makes its plan again under the new revision; the
// plan the policy is shown never holds an item that does not fit the goal, and
// a resume would show the same (the fold's Current is the loop's last).
func checkPlanSteered(t *testing.T, r steerRun, g trace.GoalRevision, goal grant.Goal) {
	t.Helper()
	ups := eventsOf[trace.PlanUpdate](t, r.events, trace.PlanUpdated)
	if len(ups) < 2 || ups[0].GoalRevision != 0 || len(ups[0].Items) != LongItems+2 {
		t.Fatalf("plan updates %+v", ups)
	}
	made := ups[0].Items
	shown := 0
	for i, plan := range r.policy.plans {
		for _, it := range plan {
			if it.Stale || (r.policy.goals[i] != "long" && !goal.Fits(it.GoalRevision)) {
				t.Fatalf("step %d: the policy was shown %+v at goal %+v", i+1, it, goal)
			}
		}
		if r.policy.goals[i] != "long" && shown == 0 {
			shown = i + 1 // the first step under the new goal
			if redirects(grant.Steer(g.Steer.Kind)) != (len(plan) == 0) {
				t.Fatalf("the first plan shown under the new goal: %+v", plan)
			}
		}
	}
	if shown == 0 {
		t.Fatal("the policy was never asked under the new goal")
	}
	cur := r.state.Plan.Current()
	if !slices.Equal(ups[len(ups)-1].Items, cur) {
		t.Fatalf("the fold's current plan %+v is not the last one recorded", cur)
	}
	if !redirects(grant.Steer(g.Steer.Kind)) {
		if len(g.StalePlan) != 0 || len(r.state.Plan) != LongItems+2 || cur[0].GoalRevision != 0 {
			t.Fatalf("a supplement: stale %v, plan %+v", g.StalePlan, r.state.Plan)
		}
		return
	}
	if len(g.StalePlan) != len(made) || len(r.state.Plan) != 2*len(made) || len(cur) != len(made) {
		t.Fatalf("stale %v, plan %d items (%d current), want %d left behind and made again", g.StalePlan, len(r.state.Plan), len(cur), len(made))
	}
	for i, it := range r.state.Plan {
		if it.Stale != (i < len(made)) || (it.Stale && it.GoalRevision != 0) || (!it.Stale && it.GoalRevision != goal.Revision) {
			t.Fatalf("plan item %d: %+v", i, it)
		}
	}
}

func revSeq(evs []trace.Event) int64 {
	for _, e := range evs {
		if e.Type == trace.GoalRevised {
			return e.Seq
		}
	}
	return 0
}

// TestSteerRefused: a steer needs a known kind, a message and a live session.
func TestSteerRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Steer(s, "ask", "how far?", ""); !errors.Is(err, journal.ErrNoSession) {
		t.Fatalf("no session: %v", err)
	}
	r, w := newMemWork(t, filepath.Join(dir, "ledger"))
	if _, _, err := RunDurable(context.Background(), s, w, Options{Goal: "long", Policy: &Scripted{Mode: ModeLong}, Tools: r},
		trace.LogOptions{Session: "s-steer", Clock: fixedClock()}, nil); err != nil {
		t.Fatal(err)
	}
	for kind, msg := range map[string]string{"rethink": "x", "correct": "  "} {
		if _, err := Steer(s, kind, msg, ""); err == nil {
			t.Fatalf("steer %q %q accepted", kind, msg)
		}
	}
	if _, err := Steer(s, "correct", "too late", ""); !errors.Is(err, ErrEnded) {
		t.Fatalf("an ended session: %v", err)
	}
}

// TestModelSteered: a model policy told of a replaced goal through each wire
// protocol: the write it asked for ran under the old goal and its result is
// stale, so the model is given "discarded" for that call, never the result,
// and the new goal as the person's message; the protocol's rules hold.
func TestModelSteered(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil,
				modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_write", Args: `{"path":"long/a.txt","content":"old goal"}`}}},
				modeltest.Turn{Text: "Understood: stopping here."})
			dir := t.TempDir()
			s, err := journal.Open(dir, journal.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r, w := newMemWork(t, filepath.Join(dir, "ledger"))
			w.before = func(context.Context, string, json.RawMessage) {
				if _, err := Steer(s, "replace", "leave long/ alone", "user"); err != nil {
					t.Error(err)
				}
			}
			res, _, err := RunDurable(context.Background(), s, w, Options{Goal: "write long/a.txt", Policy: pol, Tools: r},
				trace.LogOptions{Session: "s-model-steer", Clock: fixedClock()}, nil)
			if err != nil || res.StopReason != StopPolicy {
				t.Fatalf("%+v %v", res, err)
			}
			got := srv.Received()
			if len(got) != 2 || len(got[1].Violations) > 0 {
				t.Fatalf("%d requests; violations %v", len(got), got[len(got)-1].Violations)
			}
			rs := got[1].Results
			if len(rs) != 1 || !strings.Contains(rs[0].Content, "the person changed the goal") || strings.Contains(rs[0].Content, "bytes") {
				t.Fatalf("the model was given %+v for the stale write", rs)
			}
			if !strings.Contains(string(got[1].Body), "The goal is now:") || !strings.Contains(string(got[1].Body), "leave long/ alone") {
				t.Fatalf("the second request does not carry the new goal: %s", got[1].Body)
			}
			if _, ok := w.files["long/a.txt"]; ok {
				t.Fatalf("the stale write was not rolled back: %v", w.files)
			}
		})
	}
}

// TestSteerHeldCall: a correction left while the session is paused for a
// person's approval drops the held call: the resume records the steer with
// the held call's safe point, the call is refused without running (the
// ledger untouched), its request no longer awaits, and the policy is not
// shown it; the rest of the session goes on under the new goal.
func TestSteerHeldCall(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "ledger")
	res, _ := drive(t, dir, ledger, 0, nil, ledgerCall("deploy-1"), writeCall("notes.txt", "a"))
	if res.StopReason != StopPaused || !strings.Contains(res.Detail, "req_1") {
		t.Fatalf("first run: %s (%s); want paused on req_1", res.StopReason, res.Detail)
	}
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Steer(s, "correct", "no release today", "user"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	res, w := drive(t, dir, ledger, 0, nil, writeCall("notes.txt", "a"))
	if res.StopReason != StopPolicy || ledgerLines(t, ledger) != 0 || w.files["notes.txt"] != "a" {
		t.Fatalf("resume: %s (%s), %d ledger lines, files %v", res.StopReason, res.Detail, ledgerLines(t, ledger), w.files)
	}
	st := loadState(t, dir)
	held := st.Calls["call_1"]
	if len(st.Awaiting) != 0 || held == nil || held.Result == nil || held.Result.Result.OK || !held.Stale ||
		len(st.Steers) != 1 || st.Steers[0].SafePoint != trace.SafeHeldDropped {
		t.Fatalf("awaiting %v, held call %+v, steers %+v", st.Awaiting, held, st.Steers)
	}
}

// TestSteerSubagent: a correction while a subagent works reaches it at once
// and it stops at its own next step boundary (the call it had in flight ran to
// its end): it is cancelled long before its task's end, and the parent
// records the delegating call's answer as stale, never fed.
func TestSteerSubagent(t *testing.T) {
	dir := t.TempDir()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, w := newMemWork(t, filepath.Join(dir, "ledger"))
	if err := r.Register(DelegateTool(Delegation{Policy: func(string) (Policy, error) { return &Scripted{Mode: ModeLong}, nil }})); err != nil {
		t.Fatal(err)
	}
	reads := 0
	w.before = func(_ context.Context, name string, _ json.RawMessage) {
		if name == "fs.read" {
			if reads++; reads == 2 {
				if _, err := Steer(s, "correct", "stop the subagent", "user"); err != nil {
					t.Error(err)
				}
			}
		}
	}
	pol := &seen{Policy: &Sequence{Decisions: []Decision{call(DelegateName, map[string]any{"goal": "the long task"})}}}
	res, _, err := RunDurable(context.Background(), s, w, Options{Goal: "delegate", Policy: pol, Tools: r},
		trace.LogOptions{Session: "s-sub", Clock: fixedClock()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := s.Events(0)
	ends := eventsOf[trace.SubagentEnd](t, evs, trace.SubagentFinished)
	revs := eventsOf[trace.GoalRevision](t, evs, trace.GoalRevised)
	if res.StopReason != StopPolicy || len(ends) != 1 || ends[0].StopReason != string(StopCancelled) || ends[0].Steps > 6 {
		t.Fatalf("session %s (%s); subagent ended %+v", res.StopReason, res.Detail, ends)
	}
	if len(revs) != 1 || revs[0].SafePoint.Action != trace.SafeSubagentStopped || len(revs[0].SafePoint.Stale) != 1 {
		t.Fatalf("GoalRevised %+v", revs)
	}
	for _, h := range pol.history {
		if len(h) > 0 {
			t.Fatalf("the policy was shown the stale delegation: %v", h)
		}
	}
	// The fold records the task with the revision it was given under, and
	// its answer as stale.
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Subagents) != 1 || st.Subagents[0].Revision != 0 || !st.Subagents[0].Stale || st.Subagents[0].Goal != "the long task" ||
		st.Subagents[0].StopReason != string(StopCancelled) || st.Subagents[0].Call != revs[0].SafePoint.Stale[0] {
		t.Fatalf("subagents %+v", st.Subagents)
	}
}
