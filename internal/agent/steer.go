package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// errSteered is the cause of a context the loop cancelled for a steer (watch).
var errSteered = errors.New("steered: the person changed the goal")

// ErrEnded: the session has ended; it cannot be steered.
var ErrEnded = errors.New("the session has ended")

// Steer bounds: a message, and the goal that supplements and corrections
// make (each is added to it, and every GoalRevised records it whole, so an
// unbounded one would grow the journal and every model request without end).
const (
	MaxSteerMessage = 16 << 10
	MaxSteeredGoal  = 64 << 10
)

// Steer leaves a person's message for the durable session in s (agentbox
// sessions steer, or a coordinator's endpoint: open the session's store and
// call this): kind is supplement, correct, replace or ask. Its driver takes it
// at the next safe point (steer.go's takeSteers), or the driver resume starts
// does; it is taken once. The session must exist and not have ended.
func Steer(s *journal.Store, kind, message, by string) (trace.SteerRequest, error) {
	k, err := grant.ParseSteer(kind)
	if err != nil {
		return trace.SteerRequest{}, err
	}
	if strings.TrimSpace(message) == "" {
		return trace.SteerRequest{}, errors.New("a steer needs a message: say what to add, correct, do instead or ask")
	}
	if len(message) > MaxSteerMessage {
		return trace.SteerRequest{}, fmt.Errorf("a steer's message is %d bytes, more than %d: shorten it", len(message), MaxSteerMessage)
	}
	st, err := s.Load()
	if err != nil {
		return trace.SteerRequest{}, err
	}
	if st.Seq == 0 {
		return trace.SteerRequest{}, journal.ErrNoSession
	}
	if st.End != nil {
		return trace.SteerRequest{}, fmt.Errorf("%w (%s): start a new session for a new goal", ErrEnded, st.End.StopReason)
	}
	if changesGoal(k) {
		// The goal once this steer and those still waiting are taken.
		waiting, err := s.Steers(st.Steered())
		if err != nil {
			return trace.SteerRequest{}, err
		}
		goal, rev := st.CurrentGoal(), st.Goal.Revision
		for _, r := range append(waiting, trace.SteerRequest{Kind: string(k), Message: message}) {
			if wk, err := grant.ParseSteer(r.Kind); err == nil && changesGoal(wk) {
				rev++
				goal = revisedGoal(goal, wk, r.Message, rev)
			}
		}
		if len(goal) > MaxSteeredGoal {
			return trace.SteerRequest{}, fmt.Errorf("the goal would be %d bytes with this steer, more than %d: replace it (--kind replace) with a shorter one", len(goal), MaxSteeredGoal)
		}
	}
	if by == "" {
		by = "user"
	}
	return s.PutSteer(trace.SteerRequest{Kind: string(k), Message: message, By: by})
}

// inbox returns the steers the session has not taken; none without a durable
// inbox. A read that fails is retried at the next safe point.
func (l *loop) inbox() []trace.SteerRequest {
	d := l.o.Durable
	if d == nil || d.Inbox == nil {
		return nil
	}
	rs, err := d.Inbox(l.steered)
	if err != nil {
		return nil
	}
	return rs
}

// pending reports whether the inbox holds a steer for which want is true.
func pending(rs []trace.SteerRequest, want func(grant.Steer) bool) bool {
	for _, r := range rs {
		if k, err := grant.ParseSteer(r.Kind); err == nil && want(k) {
			return true
		}
	}
	return false
}

func changesGoal(k grant.Steer) bool { return k != grant.Ask }

// redirects reports whether k makes the calls in flight stale: a correction
// or a replacement, not a supplement.
func redirects(k grant.Steer) bool { return k == grant.Correct || k == grant.Replace }

// watch returns ctx, cancelled with cause errSteered as soon as the inbox holds
// a steer for which cancels is true, and the function that stops watching.
func (l *loop) watch(ctx context.Context, cancels func(grant.Steer) bool) (context.Context, func()) {
	d := l.o.Durable
	if d == nil || d.Inbox == nil {
		return ctx, func() {}
	}
	poll := d.SteerPoll
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if pending(l.inbox(), cancels) {
				cancel(errSteered)
				return
			}
		}
	}()
	var once sync.Once
	return wctx, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			cancel(nil)
		})
	}
}

// safePoint says what was done with the work in flight when a steer of kind k
// was taken; false if the steer does not concern it (it is taken between steps).
type safePoint func(k grant.Steer) (trace.SafePoint, bool)

// takeSteers takes the inbox's steers at a safe point, each recorded before
// it acts: an ask is answered with the session's progress (SteerAnswered, the
// goal unchanged); any other kind revises the goal (GoalRevised: the new
// revision, the goal the policy sees from now on, the grants that no longer
// fit, and at, what was done with the call or model reply in flight).
func (l *loop) takeSteers(ctx context.Context, step int, at safePoint) {
	for _, r := range l.inbox() {
		k, err := grant.ParseSteer(r.Kind)
		if err != nil || k == grant.Ask {
			ans := l.progress()
			if err != nil {
				ans = fmt.Sprintf("%v; nothing was changed. %s", err, ans)
			}
			l.log.Emit(trace.SteerAnswered, step, "", trace.SteerAnswer{Steer: r, Revision: l.goal.Revision, Answer: ans})
			if _, stop := l.halted(); stop {
				return
			}
			l.steered = r.ID
			continue
		}
		sp, ok := trace.SafePoint{}, false
		if at != nil {
			if sp, ok = at(k); ok {
				at = nil
			}
		}
		if !ok {
			sp = trace.SafePoint{Action: trace.SafeBoundary, Detail: "taken between steps: nothing was running"}
		}
		goal, _ := l.goal.Steer(k)
		text := revisedGoal(l.st.Goal, k, r.Message, goal.Revision)
		var dropped []string
		p := l.o.Permissions
		if p != nil && p.Grants != nil {
			for _, g := range p.Grants.List() {
				if !goal.Fits(g.Revision) {
					dropped = append(dropped, g.ID)
				}
			}
		}
		plan, stalePlan := l.plan.Steer(goal)
		l.log.Emit(trace.GoalRevised, step, sp.Call, trace.GoalRevision{Steer: r, Revision: goal.Revision, Epoch: goal.Epoch,
			Goal: text, SafePoint: sp, Dropped: dropped, StalePlan: stalePlan})
		if _, stop := l.halted(); stop {
			return
		}
		l.steered, l.goal = r.ID, goal
		l.plan, l.st.Plan = plan, plan.Current()
		l.st.Goal, l.st.GoalRevision = text, goal.Revision
		if p != nil && p.Grants != nil {
			p.Grants.Steer(k)
		}
	}
}

// revisedGoal is the goal after a steer: a supplement or a correction is
// added to it, a replacement is the new goal.
func revisedGoal(goal string, k grant.Steer, msg string, rev int) string {
	switch k {
	case grant.Supplement:
		return fmt.Sprintf("%s\n\nAdded by the person (goal revision %d): %s", goal, rev, msg)
	case grant.Correct:
		return fmt.Sprintf("%s\n\nCorrected by the person (goal revision %d): %s", goal, rev, msg)
	}
	return msg
}

// progress is the answer to an ask: where the session is, from its own state.
func (l *loop) progress() string {
	steps, calls := l.budget.counts()
	s := fmt.Sprintf("Goal revision %d: %d steps and %d tool calls so far", l.goal.Revision, steps, calls)
	if t, ok := l.st.Last(); ok {
		how := "succeeded"
		if !t.Result.OK {
			how = "failed"
		}
		s += fmt.Sprintf("; the last call, %s, %s", t.Decision.Tool, how)
	}
	if cur := l.plan.Current(); len(cur) > 0 {
		done := 0
		for _, it := range cur {
			if it.Status == trace.PlanDone {
				done++
			}
		}
		s += fmt.Sprintf("; %d of the plan's %d items are done", done, len(cur))
	}
	ws := l.o.Tools.Snapshot()
	s += "; the workspace's version is " + ws.Version
	if ws.Tests != nil {
		s += fmt.Sprintf("; the last test run passed: %t", ws.Tests.Passed)
	}
	return s + ". The goal is unchanged."
}

// callSafePoint is the safe point of a call that ran while a correction or a
// replacement came (seed 004): a read-only call was cancelled; a write ran to
// its end and is rolled back if the workspace is still what it left (its
// result hash), back to its base; anything else (a test run, a command, an
// external effect) was never killed and ran to its end. Either way its result
// is recorded under its revision and not fed to decisions under the new one.
// prev is the recorded workspace before the call.
func (l *loop) callSafePoint(ctx context.Context, started int64, d Decision, ts trace.ToolStart, prev trace.Effect, eff *trace.Effect, cancelled bool) safePoint {
	return func(k grant.Steer) (trace.SafePoint, bool) {
		if !redirects(k) {
			return trace.SafePoint{}, false
		}
		sp := trace.SafePoint{Call: d.CallID, Tool: d.Tool, Stale: []string{d.CallID}}
		switch {
		case ts.Effect == tool.EffectRead:
			sp.Action, sp.Detail = trace.SafeReadCancelled, "the read-only call was cancelled; its result is recorded, not fed"
			if !cancelled {
				sp.Detail = "the read-only call ended before it could be cancelled; its result is recorded, not fed"
			}
		case ts.Effect == tool.EffectWrite:
			sp.Base, sp.Now = ts.Pre, l.o.Tools.Snapshot().Version
			if eff != nil {
				sp.Result = eff.Version
			}
			sp.Action = trace.SafeWriteKept
			sp.Detail = l.rollback(ctx, &sp, prev) // sets Action once it rolled back
			if sp.Action == trace.SafeWriteRolledBack {
				sp.Effect = &trace.Effect{Version: sp.Now, Diff: prev.Diff}
				l.crash("rollback-after", started) // rolled back, not yet recorded
			}
		case d.Tool == DelegateName:
			sp.Action = trace.SafeSubagentStopped
			sp.Detail = "the subagent was told at once and stopped at its next step boundary; its answer is recorded, not fed"
		default:
			sp.Action = trace.SafeAwaited
			sp.Detail = fmt.Sprintf("a %s call is not killed in an unknown state: it ran to its end; its result is recorded, not fed", ts.Effect)
		}
		return sp, true
	}
}

// rollback undoes a finished write when the workspace is what the write left:
// it rewinds the environment to the recorded state before it (prev), and
// checks the result against the write's base hash.
func (l *loop) rollback(ctx context.Context, sp *trace.SafePoint, prev trace.Effect) string {
	rewind := l.o.Durable.Rewind
	switch {
	case sp.Base == sp.Result:
		return "the write changed nothing: kept"
	case sp.Now != sp.Result:
		return fmt.Sprintf("the workspace changed since the write (%s, not its result %s): kept, not rolled back", sp.Now, sp.Result)
	case prev.Version != "" && prev.Version != sp.Base: // "": nothing recorded, the workspace as it started
		return fmt.Sprintf("the recorded workspace before the write (%s) is not its base (%s): kept", prev.Version, sp.Base)
	case rewind == nil:
		return "this environment cannot rewind: the write is kept"
	}
	if err := rewind(context.WithoutCancel(ctx), prev.Diff); err != nil {
		sp.Now = l.o.Tools.Snapshot().Version
		return fmt.Sprintf("the rollback failed (%v): the workspace is %s", err, sp.Now)
	}
	if sp.Now = l.o.Tools.Snapshot().Version; sp.Now != sp.Base {
		return fmt.Sprintf("rewound, but the workspace is %s, not the write's base %s", sp.Now, sp.Base)
	}
	sp.Action = trace.SafeWriteRolledBack
	return "the write ran to its end; the workspace was still its result, so it was rolled back to the write's base"
}
