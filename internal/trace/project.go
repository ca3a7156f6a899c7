package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/agentbox/agentbox/internal/tool"
)

// Step is one line of the JSONL trace.
type Step struct {
	Step         int            `json:"step"`
	Decision     *Decision      `json:"decision"`
	Result       *tool.Envelope `json:"result"`
	Done         bool           `json:"done,omitempty"`
	DurationMS   int64          `json:"duration_ms"`
	BudgetBefore Budget         `json:"budget_before"`
	State        tool.Snapshot  `json:"state"`
	Usage        Usage          `json:"usage"`
	Fingerprint  string         `json:"fingerprint,omitempty"`
	// Error is why the step produced no decision (a model error, a cancellation).
	Error      string `json:"error,omitempty"`
	ErrorClass string `json:"error_class,omitempty"`
	// Permission is what the permission layer decided and asked in the step.
	Permission *StepPermission `json:"permission,omitempty"`
	// Steers are the steers taken during or right after the step: a new goal
	// revision and its safe point, or the answer to an ask.
	Steers []StepSteer `json:"steers,omitempty"`
	// Plan is the agent's plan as the step's decision revised it (PlanUpdated).
	Plan []PlanItem `json:"plan,omitempty"`
	// Session is set on the first line, End on the last.
	Session *SessionInfo `json:"session,omitempty"`
	End     *SessionEnd  `json:"end,omitempty"`
}

// Projector folds events into steps. Used as a Sink with a writer it writes each
// step's line once the next step starts or the session ends (the last line carries
// the session's end); Steps returns what it has folded.
type Projector struct {
	mu      sync.Mutex
	w       io.Writer
	session *SessionInfo
	cur     *Step       // the step being built
	pending *Step       // finished, not yet written
	early   []StepSteer // steers taken before the first step
	steps   []Step
	err     error
}

// NewProjector returns a Projector writing lines to w (nil: keep them only).
func NewProjector(w io.Writer) *Projector { return &Projector{w: w} }

// Append folds one event.
func (p *Projector) Append(e Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	dec := func(v any) bool {
		if err := json.Unmarshal(e.Data, v); err != nil {
			p.fail(fmt.Errorf("trace: event %d (%s): %w", e.Seq, e.Type, err))
			return false
		}
		return true
	}
	switch e.Type {
	case SessionCreated:
		var s SessionInfo
		if dec(&s) {
			p.session = &s
		}
	case TurnStarted:
		var t TurnStart
		if !dec(&t) {
			break
		}
		p.flush()
		if p.cur != nil { // a step that never closed (its driver died): kept, with what recovery did after it
			p.pending, p.cur = p.cur, nil
			p.flush()
		}
		p.cur = &Step{Step: e.Step, BudgetBefore: t.Budget, Steers: p.early}
		p.early = nil
	case GoalRevised:
		var g GoalRevision
		if dec(&g) {
			p.steer(StepSteer{Kind: g.Steer.Kind, Message: g.Steer.Message, Revision: g.Revision, SafePoint: g.SafePoint.Action,
				Call: g.SafePoint.Call, Detail: g.SafePoint.Detail, StalePlan: g.StalePlan})
		}
	case SteerAnswered:
		var a SteerAnswer
		if dec(&a) {
			p.steer(StepSteer{Kind: a.Steer.Kind, Message: a.Steer.Message, Revision: a.Revision, Answer: a.Answer})
		}
	case PlanUpdated:
		var u PlanUpdate
		if p.cur != nil && dec(&u) {
			p.cur.Plan = append([]PlanItem{}, u.Items...)
		}
	case ModelResponseReceived:
		var m ModelResponse
		if p.cur != nil && dec(&m) {
			p.cur.Usage.Add(Usage{Requests: 1, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CostUSD: m.CostUSD})
		}
	case ToolCallProposed:
		var d Decision
		if p.cur != nil && dec(&d) {
			p.cur.Decision = &d
		}
	case CallDecided:
		var c CallDecision
		if p.cur != nil && dec(&c) {
			p.cur.perm().Decision = string(c.Verdict.Decision)
		}
	case ApprovalRequested:
		if p.cur != nil {
			p.cur.perm().Requests++
		}
	case ApprovalResolved:
		var r ApprovalResolution
		if p.cur == nil || !dec(&r) {
			break
		}
		pm := p.cur.perm()
		if r.Unanswered {
			pm.Unanswered++
		}
		for _, d := range r.Answer.Decisions {
			if d == "allow" {
				pm.Approved++
			} else {
				pm.Denied++
			}
		}
	case ToolExecutionFinished:
		var f ToolFinish
		if p.cur != nil && dec(&f) {
			p.cur.Result, p.cur.Done = &f.Result, f.Done
		}
	case TurnCompleted, TurnFailed, TurnCancelled:
		var t TurnEnd
		if p.cur != nil && dec(&t) {
			p.cur.DurationMS, p.cur.State, p.cur.Fingerprint = t.DurationMS, t.State, t.Fingerprint
			p.cur.Error, p.cur.ErrorClass = t.Error, t.ErrorClass
			p.pending, p.cur = p.cur, nil
		}
	case SessionEnded:
		var s SessionEnd
		if !dec(&s) {
			break
		}
		if p.cur != nil { // a step that never closed
			p.pending, p.cur = p.cur, nil
		}
		if p.pending == nil {
			p.pending = &Step{}
		}
		p.pending.End = &s
		p.flush()
	}
	return p.err
}

// StepSteer is a steer as the step trace shows it.
type StepSteer struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Revision  int    `json:"goal_revision"`
	SafePoint string `json:"safe_point,omitempty"`
	Call      string `json:"call,omitempty"`
	Detail    string `json:"detail,omitempty"`
	Answer    string `json:"answer,omitempty"`
	// StalePlan are the plan items the goal change left behind.
	StalePlan []string `json:"stale_plan,omitempty"`
}

// steer attaches s to the step it was taken in or after.
func (p *Projector) steer(s StepSteer) {
	switch {
	case p.cur != nil:
		p.cur.Steers = append(p.cur.Steers, s)
	case p.pending != nil:
		p.pending.Steers = append(p.pending.Steers, s)
	default:
		p.early = append(p.early, s)
	}
}

// StepPermission counts a step's permission events: the last decision of its
// call, the approval requests (interruptions), the items approved and denied,
// the requests nobody answered.
type StepPermission struct {
	Decision   string `json:"decision,omitempty"`
	Requests   int    `json:"requests,omitempty"`
	Approved   int    `json:"approved,omitempty"`
	Denied     int    `json:"denied,omitempty"`
	Unanswered int    `json:"unanswered,omitempty"`
}

func (s *Step) perm() *StepPermission {
	if s.Permission == nil {
		s.Permission = &StepPermission{}
	}
	return s.Permission
}

// flush writes the pending step.
func (p *Projector) flush() {
	if p.pending == nil {
		return
	}
	s := *p.pending
	p.pending = nil
	if len(p.steps) == 0 {
		s.Session = p.session
	}
	p.steps = append(p.steps, s)
	if p.w == nil {
		return
	}
	b, err := json.Marshal(s)
	if err == nil {
		_, err = p.w.Write(append(b, '\n'))
	}
	if err != nil {
		p.fail(fmt.Errorf("trace: write step %d: %w", s.Step, err))
	}
}

func (p *Projector) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Steps returns the steps written so far.
func (p *Projector) Steps() []Step {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Step(nil), p.steps...)
}

// Project folds a whole event log into its steps. Events must be in seq order
// without gaps.
func Project(events []Event) ([]Step, error) {
	p := NewProjector(nil)
	for i, e := range events {
		if e.Seq != int64(i+1) {
			return nil, fmt.Errorf("trace: event %d has seq %d: the log has a gap or is out of order", i+1, e.Seq)
		}
		if err := p.Append(e); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	if p.cur != nil {
		p.pending, p.cur = p.cur, nil
	}
	p.flush()
	p.mu.Unlock()
	return p.Steps(), nil
}
