package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/taint"
	"github.com/agentbox/agentbox/internal/trace"
)

// ErrInvariant: the events break a rule of the session's state machine (a call
// with two results, a result without its call, an event after the end).
var ErrInvariant = errors.New("journal: invariant violated")

// Call is one tool call as the events tell it.
type Call struct {
	ID       string           `json:"id"`
	Step     int              `json:"step"`
	Decision trace.Decision   `json:"decision"`
	Start    *trace.ToolStart `json:"start,omitempty"`
	// Process is the environment's process running the call
	// (ToolExecutionProgress), once its driver recorded it.
	Process *trace.ToolProgress `json:"process,omitempty"`
	Result  *trace.ToolFinish   `json:"result,omitempty"`
	// Reconciled is recovery's verdict on a call whose result was lost.
	Reconciled *trace.Reconcile `json:"reconciled,omitempty"`
	// Revision is the goal revision the call was decided under; Stale is set
	// when its result came after a correction or replacement of that goal: it
	// is recorded, never fed to decisions under the new one.
	Revision int  `json:"goal_revision,omitempty"`
	Stale    bool `json:"stale,omitempty"`
}

// Steered is a steer the session took from its inbox, and what it did.
type Steered struct {
	ID       int64  `json:"id"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	Revision int    `json:"goal_revision"`
	// SafePoint is where a goal change was taken (trace.SafePoint.Action) and
	// Detail what was done; Answer is the answer to an ask.
	SafePoint string `json:"safe_point,omitempty"`
	Detail    string `json:"detail,omitempty"`
	Answer    string `json:"answer,omitempty"`
}

// Subagent is a task the session delegated (agent.delegate) on a call, with
// the goal revision it was given under. Stale is set with its call's: its
// answer came after a correction or replacement of that goal, so it is
// recorded, never fed to decisions under the new one.
type Subagent struct {
	Session    string `json:"session"`
	Call       string `json:"call"`
	Goal       string `json:"goal"`
	Revision   int    `json:"goal_revision"`
	StopReason string `json:"stop_reason,omitempty"`
	Stale      bool   `json:"stale,omitempty"`
}

// Held returns the approval request a call awaits, if it does: the call was
// stopped by its gate before it ran.
func (st *State) Held(call string) (Awaiting, bool) {
	for _, a := range st.Awaiting {
		if a.Call == call {
			return a, true
		}
	}
	return Awaiting{}, false
}

// Open reports whether the call has no terminal record yet. A call its
// environment reconciled from its process (trace.CapabilityProcess: still
// running, or ended) is open until its result is recorded.
func (c *Call) Open() bool { return c.Result == nil && (c.Reconciled == nil || c.Reattached()) }

// Reattached reports whether recovery took the call's outcome from its
// recorded process: its result is the process's, recorded next.
func (c *Call) Reattached() bool {
	return c.Reconciled != nil && c.Reconciled.Capability == trace.CapabilityProcess
}

// Awaiting is an approval request of a call, awaiting its answer.
type Awaiting struct {
	Call    string        `json:"call"`
	Step    int           `json:"step"`
	Request grant.Request `json:"request"`
}

// State is the fold of a session's events: what recovery and the projections
// start from.
type State struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
	// Session is the SessionCreated payload.
	Session *trace.SessionInfo `json:"session,omitempty"`
	// Step is the last step started; Steps and ToolCalls are the budget spent.
	Step      int         `json:"step"`
	Steps     int         `json:"steps"`
	ToolCalls int         `json:"tool_calls"`
	Usage     trace.Usage `json:"usage"`
	Answer    string      `json:"answer,omitempty"`
	// Calls by id; Order is their order of proposal.
	Calls map[string]*Call `json:"calls"`
	Order []string         `json:"order"`
	// Requests are model requests started with no response recorded.
	Requests map[string]trace.ModelRequest `json:"requests,omitempty"`
	// Workspace is the last recorded workspace state (ToolFinish.Effect):
	// Version is its content hash, Diff what re-derives it from the start.
	Workspace trace.Effect `json:"workspace"`
	NetSeq    uint64       `json:"net_seq,omitempty"`
	// Taint is every label the session's taint gained (TaintAdded): a resumed
	// session starts as tainted as it was, never cleaner.
	Taint []taint.Label `json:"taint,omitempty"`
	// Awaiting are the approval requests asked and not resolved, oldest first:
	// the session paused for a person (or its driver died waiting), and the
	// call each was asked in has not run.
	Awaiting []Awaiting `json:"awaiting,omitempty"`
	// Requested counts the approval requests asked, so that a resumed session
	// numbers its next one afresh.
	Requested int `json:"requested,omitempty"`
	// Grants are what approvals granted (ApprovalResolved), less the one-time
	// grants of calls that ran since: a resumed session holds what a person
	// granted, and is not asked again.
	Grants []grant.Grant `json:"grants,omitempty"`
	// Unknown lists the calls recovery could not reconcile: the session is
	// paused until a person resolves each.
	Unknown []string `json:"unknown,omitempty"`
	// Goal is the goal's revision and GoalText the goal since the last steer
	// ("": SessionCreated's); Steers are the inbox entries taken, the last
	// of them Steers[len-1].ID (a resumed driver takes the ones after it).
	Goal     grant.Goal `json:"goal,omitzero"`
	GoalText string     `json:"goal_text,omitempty"`
	Steers   []Steered  `json:"steers,omitempty"`
	// Plan is the agent's plan, stale items included (Plan.Current is what
	// the policy sees); Subagents the tasks it delegated, in order.
	Plan      Plan       `json:"plan,omitempty"`
	Subagents []Subagent `json:"subagents,omitempty"`
	// Compaction is the last finished compaction of the policy's context;
	// Compacting one whose driver died before its summary was recorded
	// (discarded by the next driver's RecoveryStarted).
	Compaction *trace.Compaction `json:"compaction,omitempty"`
	Compacting *trace.Compaction `json:"compacting,omitempty"`
	End        *trace.SessionEnd `json:"end,omitempty"`
	Epochs     int               `json:"recoveries,omitempty"`
	// Wall is the session's wall time so far: the time between its events,
	// except the gap before each recovery event (while no driver ran, or a
	// paused session waited for a person's verdict). A resumed session's wall
	// budget is what is left of it. LastTime is the newest event's time.
	Wall     time.Duration `json:"wall_ns,omitempty"`
	LastTime time.Time     `json:"last_time,omitzero"`

	// FromSnapshot and Replayed say how Load built the state (not stored).
	FromSnapshot int64 `json:"-"`
	Replayed     int   `json:"-"`
}

// NewState returns the state before any event.
func NewState() *State {
	return &State{Calls: map[string]*Call{}, Requests: map[string]trace.ModelRequest{}}
}

// Fold folds events into a new state.
func Fold(evs []trace.Event) (*State, error) {
	st := NewState()
	for _, e := range evs {
		if err := st.Apply(e); err != nil {
			return st, err
		}
	}
	return st, nil
}

// Apply folds one event. An event at or below the state's seq is ignored (folds
// are idempotent); one that skips a seq, or breaks an invariant, is an error
// and leaves the state unchanged.
func (st *State) Apply(e trace.Event) error {
	if e.Seq <= st.Seq {
		return nil
	}
	if e.Seq != st.Seq+1 {
		return fmt.Errorf("%w: event %d after %d", ErrGap, e.Seq, st.Seq)
	}
	if st.End != nil && !isRecovery(e.Type) {
		return fmt.Errorf("%w: event %d (%s) after the session ended", ErrInvariant, e.Seq, e.Type)
	}
	if err := st.apply(e); err != nil {
		return fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	st.Seq, st.Hash = e.Seq, e.Hash
	if !st.LastTime.IsZero() && !isRecovery(e.Type) && e.Time.After(st.LastTime) {
		st.Wall += e.Time.Sub(st.LastTime)
	}
	if e.Time.After(st.LastTime) {
		st.LastTime = e.Time
	}
	return nil
}

func isRecovery(t trace.Type) bool {
	return t == trace.RecoveryStarted || t == trace.RecoveryReconciled || t == trace.RecoverySummary
}

func (st *State) apply(e trace.Event) error {
	dec := func(v any) error {
		if err := json.Unmarshal(e.Data, v); err != nil {
			return fmt.Errorf("%w: payload: %v", ErrInvariant, err)
		}
		return nil
	}
	call := func() (*Call, error) {
		c := st.Calls[e.CallID]
		if c == nil {
			return nil, fmt.Errorf("%w: call %q was never proposed", ErrInvariant, e.CallID)
		}
		if !c.Open() {
			return nil, fmt.Errorf("%w: call %q has a result already", ErrInvariant, e.CallID)
		}
		return c, nil
	}
	switch e.Type {
	case trace.SessionCreated:
		var s trace.SessionInfo
		if err := dec(&s); err != nil {
			return err
		}
		if st.Session != nil {
			return fmt.Errorf("%w: a second SessionCreated", ErrInvariant)
		}
		st.Session = &s
	case trace.TurnStarted:
		if e.Step <= st.Step {
			return fmt.Errorf("%w: step %d after step %d", ErrInvariant, e.Step, st.Step)
		}
		st.Step = e.Step
		st.Steps++
	case trace.ModelRequestStarted:
		var r trace.ModelRequest
		if err := dec(&r); err != nil {
			return err
		}
		st.Requests[r.RequestID] = r
	case trace.ModelResponseReceived:
		var r trace.ModelResponse
		if err := dec(&r); err != nil {
			return err
		}
		delete(st.Requests, r.RequestID)
		st.Usage.Add(trace.Usage{Requests: 1, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD})
	case trace.ToolCallProposed:
		var d trace.Decision
		if err := dec(&d); err != nil {
			return err
		}
		if d.Text != "" {
			st.Answer = d.Text
		}
		if e.CallID == "" { // a decision to stop
			return nil
		}
		if st.Calls[e.CallID] != nil {
			return fmt.Errorf("%w: call %q proposed twice", ErrInvariant, e.CallID)
		}
		st.Calls[e.CallID] = &Call{ID: e.CallID, Step: e.Step, Decision: d, Revision: d.GoalRevision}
		st.Order = append(st.Order, e.CallID)
	case trace.ToolExecutionStarted:
		c, err := call()
		if err != nil {
			return err
		}
		if c.Start != nil {
			return fmt.Errorf("%w: call %q started twice", ErrInvariant, e.CallID)
		}
		var s trace.ToolStart
		if err := dec(&s); err != nil {
			return err
		}
		c.Start = &s
		st.ToolCalls++
	case trace.ToolExecutionProgress:
		c, err := call()
		if err != nil {
			return err
		}
		if c.Start == nil || c.Process != nil || c.Reconciled != nil {
			return fmt.Errorf("%w: call %q: a process recorded before its start, twice, or after recovery", ErrInvariant, e.CallID)
		}
		var p trace.ToolProgress
		if err := dec(&p); err != nil {
			return err
		}
		if p.Process == "" {
			return fmt.Errorf("%w: call %q: a progress without a process", ErrInvariant, e.CallID)
		}
		c.Process = &p
	case trace.ToolExecutionFinished:
		c, err := call()
		if err != nil {
			return err
		}
		var f trace.ToolFinish
		if err := dec(&f); err != nil {
			return err
		}
		c.Result = &f
		c.Stale = c.Stale || !st.Goal.Fits(c.Revision)
		st.staleSubagents(c)
		st.Awaiting = slices.DeleteFunc(st.Awaiting, func(a Awaiting) bool { return a.Call == e.CallID }) // not run: nothing awaits
		st.Grants = slices.DeleteFunc(st.Grants, func(g grant.Grant) bool { return g.Call == e.CallID })
		if f.Effect != nil && f.Effect.Version != st.Workspace.Version {
			st.Workspace = *f.Effect // the diff is recorded only with a change
		}
	case trace.TurnFailed, trace.TurnCancelled:
		// The turn ended: no model request of it is in flight (a reply
		// cancelled for a steer, a model error), and a recovery must not
		// report one as lost.
		clear(st.Requests)
	case trace.NetworkAccess:
		var n struct {
			Seq uint64 `json:"seq"`
		}
		_ = json.Unmarshal(e.Data, &n)
		st.NetSeq = max(st.NetSeq, n.Seq)
	case trace.TaintAdded:
		var ti trace.TaintInfo
		if err := dec(&ti); err != nil {
			return err
		}
		st.Taint = append(st.Taint, ti.Labels...)
	case trace.SubagentEvent:
		// A subagent's reads taint the session and its spending is the
		// session's; its calls are its own (a resume asks a person about a
		// delegating call it lost).
		var r trace.SubagentRecord
		if err := dec(&r); err != nil {
			return err
		}
		switch r.Event.Type {
		case trace.TaintAdded:
			var ti trace.TaintInfo
			if err := json.Unmarshal(r.Event.Data, &ti); err != nil {
				return fmt.Errorf("%w: subagent taint: %v", ErrInvariant, err)
			}
			st.Taint = append(st.Taint, ti.Labels...)
		case trace.TurnStarted: // what it spends is the session's budget (agent.Budget.absorb)
			st.Steps++
		case trace.ToolExecutionStarted:
			st.ToolCalls++
		case trace.ModelResponseReceived:
			var m trace.ModelResponse
			if err := json.Unmarshal(r.Event.Data, &m); err == nil {
				st.Usage.Add(trace.Usage{Requests: 1, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CostUSD: m.CostUSD})
			}
		}
	case trace.SubagentStarted:
		var a trace.SubagentStart
		if err := dec(&a); err != nil {
			return err
		}
		if _, err := call(); err != nil {
			return err
		}
		st.Subagents = append(st.Subagents, Subagent{Session: a.Session, Call: e.CallID, Goal: a.Goal, Revision: a.GoalRevision})
	case trace.SubagentFinished:
		var a trace.SubagentEnd
		if err := dec(&a); err != nil {
			return err
		}
		i := slices.IndexFunc(st.Subagents, func(s Subagent) bool { return s.Session == a.Session && s.Call == e.CallID })
		if i < 0 || st.Subagents[i].StopReason != "" {
			return fmt.Errorf("%w: subagent %q finished but not running on call %q", ErrInvariant, a.Session, e.CallID)
		}
		st.Subagents[i].StopReason = a.StopReason
	case trace.PlanUpdated:
		var u trace.PlanUpdate
		if err := dec(&u); err != nil {
			return err
		}
		p, err := st.Plan.Update(u, st.Goal)
		if err != nil {
			return err
		}
		st.Plan = p
	case trace.ApprovalRequested:
		var r grant.Request
		if err := dec(&r); err != nil {
			return err
		}
		if _, err := call(); err != nil {
			return err
		}
		if slices.ContainsFunc(st.Awaiting, func(a Awaiting) bool { return a.Request.ID == r.ID }) {
			return fmt.Errorf("%w: approval request %q asked twice", ErrInvariant, r.ID)
		}
		st.Awaiting = append(st.Awaiting, Awaiting{Call: e.CallID, Step: e.Step, Request: r})
		st.Requested++
	case trace.ApprovalResolved:
		var r trace.ApprovalResolution
		if err := dec(&r); err != nil {
			return err
		}
		i := slices.IndexFunc(st.Awaiting, func(a Awaiting) bool { return a.Request.ID == r.Answer.Request })
		if i < 0 {
			return fmt.Errorf("%w: approval request %q resolved but not awaiting", ErrInvariant, r.Answer.Request)
		}
		st.Awaiting = slices.Delete(st.Awaiting, i, i+1)
		st.Grants = append(st.Grants, r.Grants...)
	case trace.RecoveryStarted:
		st.Epochs++
		st.Compacting = nil // its summary was never recorded: made again from the history
	case trace.ContextCompacting:
		var c trace.Compaction
		if err := dec(&c); err != nil {
			return err
		}
		if st.Compacting != nil {
			return fmt.Errorf("%w: a compaction through %q begun while one through %q is", ErrInvariant, c.Through, st.Compacting.Through)
		}
		if st.Calls[c.Through] == nil || (st.Compaction != nil && c.Turns <= st.Compaction.Turns) {
			return fmt.Errorf("%w: a compaction of %d turns through %q", ErrInvariant, c.Turns, c.Through)
		}
		st.Compacting = &c
	case trace.ContextCompacted:
		var c trace.Compaction
		if err := dec(&c); err != nil {
			return err
		}
		if p := st.Compacting; p == nil || p.Through != c.Through || p.Turns != c.Turns {
			return fmt.Errorf("%w: a compaction through %q finished but not begun", ErrInvariant, c.Through)
		}
		st.Compaction, st.Compacting = &c, nil
	case trace.RecoveryReconciled:
		var r trace.Reconcile
		if err := dec(&r); err != nil {
			return err
		}
		if r.RequestID != "" { // an interrupted model request
			delete(st.Requests, r.RequestID)
			return nil
		}
		c := st.Calls[e.CallID]
		if c == nil {
			return fmt.Errorf("%w: call %q was never proposed", ErrInvariant, e.CallID)
		}
		if c.Result != nil || (c.Reconciled != nil && c.Reconciled.Outcome != trace.OutcomeUnknown && !c.Reattached()) {
			return fmt.Errorf("%w: call %q has a result already", ErrInvariant, e.CallID)
		}
		if r.Capability == trace.CapabilityProcess && (c.Process == nil || r.Process != c.Process.Process) {
			return fmt.Errorf("%w: call %q reconciled from process %q, not its recorded one", ErrInvariant, e.CallID, r.Process)
		}
		c.Reconciled = &r
		st.Unknown = without(st.Unknown, e.CallID)
		if r.Outcome == trace.OutcomeUnknown {
			st.Unknown = append(st.Unknown, e.CallID)
		}
	case trace.GoalRevised:
		var r trace.GoalRevision
		if err := dec(&r); err != nil {
			return err
		}
		return st.revise(r)
	case trace.SteerAnswered:
		var r trace.SteerAnswer
		if err := dec(&r); err != nil {
			return err
		}
		if k, err := grant.ParseSteer(r.Steer.Kind); r.Steer.ID <= st.Steered() || (err == nil && k != grant.Ask) {
			return fmt.Errorf("%w: steer %d (%s) answered after steer %d", ErrInvariant, r.Steer.ID, r.Steer.Kind, st.Steered())
		}
		st.Steers = append(st.Steers, Steered{ID: r.Steer.ID, Kind: r.Steer.Kind, Message: r.Steer.Message,
			Revision: st.Goal.Revision, Answer: r.Answer})
	case trace.SessionEnded:
		var s trace.SessionEnd
		if err := dec(&s); err != nil {
			return err
		}
		st.End = &s
	}
	return nil
}

// revise folds a goal change: the inbox is taken in order and once, the
// revision follows the kind (grant.Goal.Steer), the calls it names stale have
// been proposed, and the grants of an earlier goal epoch go.
func (st *State) revise(r trace.GoalRevision) error {
	k, err := grant.ParseSteer(r.Steer.Kind)
	if err != nil || k == grant.Ask {
		return fmt.Errorf("%w: a goal revised by a steer of kind %q", ErrInvariant, r.Steer.Kind)
	}
	if r.Steer.ID <= st.Steered() {
		return fmt.Errorf("%w: steer %d taken after steer %d", ErrInvariant, r.Steer.ID, st.Steered())
	}
	g, _ := st.Goal.Steer(k)
	if g.Revision != r.Revision || g.Epoch != r.Epoch {
		return fmt.Errorf("%w: a %s of goal %+v makes revision %d epoch %d, not %d epoch %d",
			ErrInvariant, k, st.Goal, g.Revision, g.Epoch, r.Revision, r.Epoch)
	}
	for _, id := range r.SafePoint.Stale {
		if st.Calls[id] == nil {
			return fmt.Errorf("%w: stale call %q was never proposed", ErrInvariant, id)
		}
	}
	plan, stale := st.Plan.Steer(g)
	if !slices.Equal(stale, r.StalePlan) {
		return fmt.Errorf("%w: a %s makes plan items %v stale, not %v", ErrInvariant, k, stale, r.StalePlan)
	}
	st.Goal, st.GoalText, st.Plan = g, r.Goal, plan
	if r.SafePoint.Effect != nil { // a write rolled back
		st.Workspace = *r.SafePoint.Effect
	}
	for _, id := range r.SafePoint.Stale {
		st.Calls[id].Stale = true
		st.staleSubagents(st.Calls[id])
	}
	st.Grants = slices.DeleteFunc(st.Grants, func(x grant.Grant) bool { return !g.Fits(x.Revision) })
	st.Steers = append(st.Steers, Steered{ID: r.Steer.ID, Kind: r.Steer.Kind, Message: r.Steer.Message,
		Revision: g.Revision, SafePoint: r.SafePoint.Action, Detail: r.SafePoint.Detail})
	return nil
}

// staleSubagents marks stale the subagents of a stale call.
func (st *State) staleSubagents(c *Call) {
	for i := range st.Subagents {
		if st.Subagents[i].Call == c.ID && c.Stale {
			st.Subagents[i].Stale = true
		}
	}
}

// Steered returns the id of the last inbox entry the session took.
func (st *State) Steered() int64 {
	if len(st.Steers) == 0 {
		return 0
	}
	return st.Steers[len(st.Steers)-1].ID
}

// CurrentGoal is the goal as the policy sees it: the last steer's, or the
// session's first.
func (st *State) CurrentGoal() string {
	if st.GoalText != "" || st.Session == nil {
		return st.GoalText
	}
	return st.Session.Goal
}

func without(ids []string, id string) []string {
	var out []string
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// Pending returns the calls without a terminal record, in order: those
// recovery must reconcile.
func (st *State) Pending() []*Call {
	var out []*Call
	for _, id := range st.Order {
		if c := st.Calls[id]; c.Open() {
			out = append(out, c)
		}
	}
	return out
}
