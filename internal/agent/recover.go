package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"time"

	"github.com/agentbox/agentbox/internal/chain"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// recover runs seed 004's recovery after the journal's state was replayed
// (restore): every model request and tool call left without a result gets a
// verdict (reconcile), then a RecoverySummary, before any new action. It stops
// the session when a call's outcome is unknown (paused for a person) or the
// session had finished. A call held for an approval is continued once its
// requests are answered (continueHeld).
func (l *loop) recover(ctx context.Context) (ending, bool) {
	d := l.o.Durable
	st := d.State
	compacting := st.Compacting // RecoveryStarted discards it
	l.log.Emit(trace.RecoveryStarted, st.Step, "", trace.RecoveryStart{Epoch: d.Epoch, Snapshot: st.FromSnapshot,
		Replayed: st.Replayed, LastSeq: st.Seq})
	n := 0
	reqs := make([]string, 0, len(st.Requests))
	for id := range st.Requests {
		reqs = append(reqs, id)
	}
	slices.Sort(reqs)
	for _, id := range reqs {
		// The provider may have answered and charged: the request is not queried
		// (no provider offers it) but made again, and the duplicate's cost is the
		// reservation recorded with it.
		l.log.Emit(trace.RecoveryReconciled, st.Step, "", trace.Reconcile{RequestID: id, Capability: "none",
			Outcome: trace.OutcomeFailed, By: byRecovery,
			Detail: fmt.Sprintf("the model stream ended with the process; asked again (a duplicate may be charged, up to $%.6f reserved)", st.Requests[id].ReservedUSD)})
		n++
	}
	found := l.o.Tools.Snapshot().Version
	unknown := slices.Clone(st.Unknown)
	var attached []attachedCall
	var running []string
	for _, c := range st.Pending() {
		if c == l.held {
			continue // stopped by its gate before it ran, for a person's answer: continued below
		}
		r, a, err := l.reattach(ctx, c, found)
		if err != nil { // the environment did not answer: nothing is decided without it
			return ending{StopDetached, fmt.Sprintf("recovery cannot ask the environment about %s's process %s: %v", c.ID, c.Process.Process, err)}, true
		}
		ev := l.log.Emit(trace.RecoveryReconciled, c.Step, c.ID, r)
		n++
		switch {
		case r.Outcome == trace.OutcomeUnknown:
			unknown = append(unknown, c.ID)
		case a != nil:
			attached = append(attached, attachedCall{c, a, ev.Seq})
			if a.Running {
				running = append(running, c.ID)
			}
		}
	}
	var compaction string
	if c := compacting; c != nil {
		compaction = fmt.Sprintf("the compaction of %d turns through %s was not finished: discarded, the full history stands; it is made again", c.Turns, c.Through)
	}
	l.log.Emit(trace.RecoverySummary, st.Step, "", trace.RecoverySummaryInfo{Epoch: d.Epoch, Reconciled: n, StillRunning: running,
		Unknown: unknown, Held: heldID(l.held), Drift: d.Drift, Paused: len(unknown) > 0, Compaction: compaction})
	if e, stop := l.halted(); stop {
		return e, true
	}
	for _, ac := range attached {
		e, stop, lost := l.finishAttached(ctx, ac, found)
		if stop {
			return e, true
		}
		unknown = append(unknown, lost...)
	}
	if len(unknown) > 0 {
		return ending{StopPaused, fmt.Sprintf("the outcome of %s is unknown: check it, then agentbox sessions resolve DIR CALL --as succeeded|failed",
			strings.Join(unknown, ", "))}, true
	}
	if c := l.done; c != nil {
		if s := summaryOf(c.Result.Result); s != "" {
			l.answer = s
		}
		return ending{StopDone, "finished by " + c.Decision.Tool}, true
	}
	if l.held != nil {
		// A correction left while it awaited a person: the call was decided
		// under the old goal, and is not run.
		c := l.held
		l.takeSteers(ctx, st.Step, func(k grant.Steer) (trace.SafePoint, bool) {
			return trace.SafePoint{Action: trace.SafeHeldDropped, Call: c.ID, Tool: c.Decision.Tool, Stale: []string{c.ID},
				Detail: "the call awaiting a person's approval was decided under the old goal: it is not run"}, redirects(k)
		})
		if e, stop := l.halted(); stop {
			return e, true
		}
		if !l.goal.Fits(c.Revision) {
			l.held = nil
			out := refused(tool.Errorf(tool.EPERM, false, tool.ActStop, "not run: the goal changed while the call awaited a person's approval"))
			return l.complete(ctx, c.Step, time.Now(), l.budget.Used(), c.Decision, out, nil, nil, true)
		}
		return l.continueHeld(ctx)
	}
	return ending{}, false
}

// attachedCall is a call whose process recovery found again in its
// environment; reconciled is its RecoveryReconciled.
type attachedCall struct {
	c          *journal.Call
	a          *tool.Attachment
	reconciled int64
}

// Reattacher is Tools that can find a call's recorded process again
// (*tool.Registry).
type Reattacher interface {
	Reattach(ctx context.Context, c tool.Call, p tool.Progress) (*tool.Attachment, error)
}

// reattach decides what a call without a result did from the process it
// recorded (ToolExecutionProgress), asking the environment: still running
// (still_running: waited for, finishAttached), or ended (its own exit and
// output are the result: succeeded or failed). A call without a recorded
// process, or whose process the environment does not know, is reconciled by
// the other rules (reconcile, lost). An error is an environment that did not
// answer.
func (l *loop) reattach(ctx context.Context, c *journal.Call, found string) (trace.Reconcile, *tool.Attachment, error) {
	if c.Start == nil || c.Process == nil {
		return reconcile(c, found), nil, nil
	}
	p := c.Process
	rt, ok := l.o.Tools.(Reattacher)
	if !ok {
		return lost(c, found, tool.ErrGone), nil, nil
	}
	a, err := rt.Reattach(ctx, tool.Call{ID: c.ID, Tool: c.Decision.Tool, Args: c.Decision.Args}, tool.Progress{Env: p.Env, Process: p.Process})
	switch {
	case errors.Is(err, tool.ErrGone):
		return lost(c, found, err), nil, nil
	case err != nil:
		return trace.Reconcile{}, nil, err
	}
	r := trace.Reconcile{Tool: c.Decision.Tool, Capability: trace.CapabilityProcess, Process: p.Process, By: byRecovery,
		Pre: c.Start.Pre, Found: found}
	if a.Running {
		r.Outcome, r.Detail = trace.OutcomeStillRunning, fmt.Sprintf("process %s still runs in environment %s: waited for, not run again", p.Process, p.Env)
		return r, a, nil
	}
	out, err := a.Wait(ctx) // it ended: its result is at hand
	if err != nil {
		return lost(c, found, err), nil, nil
	}
	r.Outcome, r.Detail = trace.OutcomeFailed, fmt.Sprintf("process %s had ended unsuccessfully; its recorded exit and output are the result", p.Process)
	if succeeded(out.Envelope) {
		r.Outcome, r.Detail = trace.OutcomeSucceeded, fmt.Sprintf("process %s had ended with exit 0; its recorded output is the result", p.Process)
	}
	return r, a, nil
}

// lost reconciles a call whose recorded process the environment does not
// know. A process of another environment (a local one, which died with its
// driver: the workspace is re-derived without what it did) leaves the other
// rules (reconcile). One the call's own environment forgot or lost (it was
// restarted) may have had any effect: it is never run again, unless it is
// idempotent, and is unknown for a person to check.
func lost(c *journal.Call, found string, why error) trace.Reconcile {
	if errors.Is(why, tool.ErrElsewhere) {
		r := reconcile(c, found)
		r.Detail = fmt.Sprintf("its process %s ran in environment %s, gone with its driver: %s", c.Process.Process, c.Process.Env, r.Detail)
		return r
	}
	r := trace.Reconcile{Tool: c.Decision.Tool, Capability: "none", By: byRecovery, Pre: c.Start.Pre, Found: found}
	if c.Start.Idempotent {
		r.Outcome, r.Detail = trace.OutcomeRetried, fmt.Sprintf("the environment does not know its process %s (%v); the call is idempotent: run again", c.Process.Process, why)
		return r
	}
	r.Outcome, r.Detail = trace.OutcomeUnknown, fmt.Sprintf("the environment does not know its process %s (%s): it may have run, and must not run again; a person must check", c.Process.Process, why)
	return r
}

// succeeded: an exec result that ended with exit 0, in time.
func succeeded(e tool.Envelope) bool {
	var d struct {
		ExitCode int  `json:"exit_code"`
		TimedOut bool `json:"timed_out"`
	}
	return e.OK && json.Unmarshal(e.Data, &d) == nil && d.ExitCode == 0 && !d.TimedOut
}

// finishAttached records the result of a call recovery found the process
// of: a running one waited for first. One its environment lost meanwhile is
// reconciled as lost (and returned, if unknown).
func (l *loop) finishAttached(ctx context.Context, ac attachedCall, found string) (ending, bool, []string) {
	c := ac.c
	t0, used0 := time.Now(), l.budget.Used()
	if ac.a.Running {
		l.crash("reattached", ac.reconciled)
	}
	out, err := ac.a.Wait(ctx)
	if l.o.Permissions != nil {
		l.observed(c.Step, c.ID) // what its output taints, as if its driver had lived
	}
	if err != nil { // lost while it was waited for
		r := lost(c, found, err)
		l.log.Emit(trace.RecoveryReconciled, c.Step, c.ID, r)
		if e, stop := l.halted(); stop {
			return e, true, nil
		}
		if r.Outcome == trace.OutcomeUnknown {
			return ending{}, false, []string{c.ID}
		}
		return ending{}, false, nil
	}
	e, stop := l.complete(ctx, c.Step, t0, used0, c.Decision, out, nil, l.effect(ctx, c.Start.Pre), !l.goal.Fits(c.Revision))
	return e, stop, nil
}

func heldID(c *journal.Call) string {
	if c == nil {
		return ""
	}
	return c.ID
}

// continueHeld continues the call a session paused in for a person's answer:
// its awaiting requests are answered (the Approver reads the answer `agentbox
// sessions approve|deny` left, or pauses the session again), and the call is
// made as its driver would have made it, under its id, so that one-time grants
// apply to it and to nothing else.
func (l *loop) continueHeld(ctx context.Context) (ending, bool) {
	c := l.held
	l.held = nil
	var held []grant.Request
	for _, a := range l.o.Durable.State.Awaiting {
		if a.Call == c.ID {
			held = append(held, a.Request)
		}
	}
	t0, used0 := time.Now(), l.budget.Used()
	out, stop := l.call(ctx, c.Step, tool.Call{ID: c.ID, Tool: c.Decision.Tool, Args: c.Decision.Args}, held)
	if stop != nil && stop.reason == StopPaused {
		return *stop, true
	}
	return l.complete(ctx, c.Step, t0, used0, c.Decision, out, stop, l.effect(ctx, c.Start.Pre), false)
}

// reconcile decides what a call without a result did, from its recovery
// capability: a call that never started, or a read-only or idempotent one, is
// proposed afresh; one whose effect is on the workspace is verifiable against
// its effect fingerprint (the workspace's content hash before it); any other is
// unknown. The environment it is checked against is the re-derived one.
func reconcile(c *journal.Call, found string) trace.Reconcile {
	r := trace.Reconcile{Tool: c.Decision.Tool, By: byRecovery, Found: found}
	s := c.Start
	if s == nil {
		r.Capability, r.Outcome, r.Detail = "none", trace.OutcomeNotRun, "proposed but never started: decided afresh"
		return r
	}
	r.Pre = s.Pre
	switch {
	case s.Effect == tool.EffectRead:
		r.Capability, r.Outcome, r.Detail = "read_only", trace.OutcomeRetried, "read-only: run again"
	case s.Effect == tool.EffectWrite || s.Effect == tool.EffectExec:
		r.Capability = "verifiable"
		switch {
		case found == s.Pre:
			r.Outcome, r.Detail = trace.OutcomeNotRun, "the workspace is as it was before the call: no effect; decided afresh"
		case s.Idempotent:
			r.Outcome, r.Detail = trace.OutcomeRetried, "the workspace changed and the call is idempotent: run again"
		default:
			r.Outcome, r.Detail = trace.OutcomeUnknown, "the workspace changed and the call is not idempotent: a person must check"
		}
	case s.Idempotent:
		r.Capability, r.Outcome, r.Detail = "none", trace.OutcomeRetried, "idempotent: run again"
	default:
		r.Capability, r.Outcome, r.Detail = "none", trace.OutcomeUnknown,
			fmt.Sprintf("a %s effect outside the workspace that cannot be checked and must not be repeated blindly", s.Effect)
	}
	return r
}

func anchorOf(st *journal.State) chain.Anchor { return chain.Anchor{Seq: st.Seq, Hash: st.Hash} }
