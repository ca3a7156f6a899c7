package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// Durable makes a session durable. Its Log must have the journal's driver as
// its Journal (and, to resume, start After the state's last event).
type Durable struct {
	// State is the journal's fold (Driver.State); one with events is resumed:
	// the loop restores its history and budget from it and recovers (recover.go)
	// before any new action.
	State *journal.State
	Epoch int64
	// Diff returns the environment's diff from its start, recorded with each call
	// that changed the workspace so that a new environment can be brought to
	// the same state (tool.Env.Restore). Nil: not recorded.
	Diff func(ctx context.Context) ([]byte, error)
	// Drift is how the re-derived workspace differs from the recorded state
	// (RunSession fills it); reported in RecoverySummary.
	Drift string
	// Inbox returns the session's steering inbox after an entry
	// (journal.Store.Steers); nil: the session cannot be steered. The loop
	// looks at it between steps and, every SteerPoll (default 50ms), while the
	// model replies or a tool runs (steer.go).
	Inbox     func(after int64) ([]trace.SteerRequest, error)
	SteerPoll time.Duration
	// Rewind brings the live workspace back to a recorded Diff, to roll back a
	// write a correction made stale (Rewinder); nil: writes are kept.
	Rewind func(ctx context.Context, diff []byte) error
	// Crash, if set, is called at the loop's crash points: "effect-before:N" and
	// "effect-after:N" around the side effect of the call whose
	// ToolExecutionStarted is event N, "process-started:N" once that call's
	// process is recorded (ToolExecutionProgress, event N) before it is waited
	// for, "reattached:N" once a recovery recorded that process still running
	// (RecoveryReconciled, event N) before it waits for it, "rollback-after:N"
	// once a steer rolled a call's write back, before GoalRevised records it,
	// and "compact:N" inside the compaction begun by event N (fault injection).
	Crash func(point string)
	// recorded is the workspace version the journal's fold holds
	// (State.Workspace.Version, then each call's): a call that finds the
	// workspace elsewhere records its diff even if it changed nothing itself
	// (the effect of a lost call a person resolved as succeeded).
	recorded string
}

// halted stops a session whose journal refused an event.
func (l *loop) halted() (ending, bool) {
	if err := l.log.Halted(); err != nil {
		return ending{StopJournal, err.Error()}, true
	}
	return ending{}, false
}

func (l *loop) crash(point string, seq int64) {
	if d := l.o.Durable; d != nil && d.Crash != nil {
		d.Crash(point + ":" + strconv.FormatInt(seq, 10))
	}
}

// progressed records the process a call runs in (tool.WithProgress) before
// the call waits for it: a driver that dies meanwhile leaves its recovery the
// process to ask the environment about (reattach).
func (l *loop) progressed(step int, call string) func(tool.Progress) error {
	return func(p tool.Progress) error {
		ev := l.log.Emit(trace.ToolExecutionProgress, step, call, trace.ToolProgress{Env: p.Env, Process: p.Process})
		if err := l.log.Halted(); err != nil {
			return err
		}
		l.crash("process-started", ev.Seq)
		return nil
	}
}

// effect is the workspace as a call left it, for a durable session.
func (l *loop) effect(ctx context.Context, pre string) *trace.Effect {
	d := l.o.Durable
	if d == nil {
		return nil
	}
	e := &trace.Effect{Version: l.o.Tools.Snapshot().Version}
	moved := e.Version != pre || (d.recorded != "" && e.Version != d.recorded)
	d.recorded = e.Version
	if moved && d.Diff != nil {
		diff, err := d.Diff(context.WithoutCancel(ctx))
		if err != nil {
			e.DiffError = err.Error() // a resume will report the drift
		}
		e.Diff = diff
	}
	return e
}

// restore continues a session from its journal's state: its step count, budget
// spent (its wall time too, which Run takes off the deadline), answer, taint,
// the grants approvals gave (a person is not asked twice), the call held for an
// approval, and the history the policy saw.
func (l *loop) restore(st *journal.State) error {
	l.resumed = true
	l.st.step = st.Step
	l.goal, l.steered = st.Goal, st.Steered()
	l.st.Goal, l.st.GoalRevision = st.CurrentGoal(), st.Goal.Revision
	l.plan, l.st.Plan = st.Plan, st.Plan.Current()
	l.budget.restore(st.Steps, st.ToolCalls, st.Usage)
	l.answer = st.Answer
	if p := l.o.Permissions; p != nil {
		p.init()
		for _, lb := range st.Taint {
			p.Taint.Add(lb)
		}
		p.Grants.SetGoal(st.Goal)
		if err := p.Grants.Restore(st.Grants); err != nil {
			return err
		}
		p.sh.mu.Lock()
		p.sh.reqs = st.Requested
		p.sh.mu.Unlock()
	}
	for _, id := range st.Order {
		c := st.Calls[id]
		if _, ok := st.Held(id); ok && c.Open() && c.Start != nil && l.o.Permissions != nil {
			l.held = c
		}
		if t, ok := turnOf(c); ok && !c.Stale { // a stale result is recorded, never fed
			l.st.History = append(l.st.History, t)
			if cp := st.Compaction; cp != nil && cp.Through == id {
				l.st.Summary, l.st.Summarized = cp.Summary, len(l.st.History)
			}
			if c.Result != nil && c.Result.Done {
				l.done = c
			}
		}
	}
	return nil
}

// turnOf is the turn the policy saw, or sees, for a call: its result, or a
// person's verdict on a lost one. A call recovery will propose afresh is none.
func turnOf(c *journal.Call) (Turn, bool) {
	t := Turn{Step: c.Step, Decision: c.Decision}
	switch {
	case c.Result != nil:
		t.Result = c.Result.Result
	case c.Reconciled != nil && c.Reconciled.By == byPerson && c.Reconciled.Outcome != trace.OutcomeUnknown:
		ok := c.Reconciled.Outcome == trace.OutcomeSucceeded
		data, _ := json.Marshal(map[string]string{"recovered": c.Reconciled.Outcome, "note": c.Reconciled.Detail})
		t.Result = tool.Envelope{OK: ok, Data: data, Refs: []tool.Ref{}, ObservedAt: time.Now(),
			Text: fmt.Sprintf("The result of this call was lost in a crash; a person checked and recorded that it %s.", c.Reconciled.Outcome)}
		if !ok {
			t.Result.Error = tool.Errorf(tool.EINTERNAL, true, tool.ActRetry, "the call's effect did not happen (recorded by a person after a crash)")
		}
	default:
		return Turn{}, false
	}
	return t, true
}

const byPerson, byRecovery = "person", "recovery"

// Resolve records a person's verdict on a call recovery left unknown
// (agentbox sessions resolve): outcome is trace.OutcomeSucceeded or
// OutcomeFailed. It takes the session's next epoch, fencing any driver still
// running.
func Resolve(ctx context.Context, s *journal.Store, callID, outcome, note string) error {
	if outcome != trace.OutcomeSucceeded && outcome != trace.OutcomeFailed {
		return fmt.Errorf("agent: resolve %s as %q: use succeeded or failed", callID, outcome)
	}
	d, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	st := d.State()
	c := st.Calls[callID]
	if c == nil || c.Reconciled == nil || c.Reconciled.Outcome != trace.OutcomeUnknown {
		return fmt.Errorf("agent: call %q is not awaiting a person (unknown calls: %v)", callID, st.Unknown)
	}
	log := trace.NewLog(trace.LogOptions{Session: st.Session.Session, Journal: d, After: anchorOf(st)})
	if note == "" {
		note = "resolved by a person"
	}
	log.Emit(trace.RecoveryReconciled, c.Step, callID, trace.Reconcile{Tool: c.Decision.Tool, Capability: "none",
		Outcome: outcome, By: byPerson, Detail: note})
	return log.Halted()
}
