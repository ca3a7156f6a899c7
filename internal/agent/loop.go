package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// Tools is what the loop runs calls through: a *tool.Registry, or Replay's
// recorded results.
type Tools interface {
	Defs() []tool.Def
	Spec(name string) (tool.Spec, bool)
	Call(ctx context.Context, c tool.Call, charge func(tool.Cost) error) tool.Outcome
	Snapshot() tool.Snapshot
}

// Options describe one session.
type Options struct {
	Goal   string
	Policy Policy
	Tools  Tools
	Limits Limits
	// Log receives the session's events; nil records nothing. Its session id
	// becomes the session's.
	Log *trace.Log
	// Permissions is the session's permission state, the Gate of Tools' registry: the
	// loop records its decisions and asks its Approver what it asks. Nil: no
	// permission layer (a registry without a gate).
	Permissions *Permissions
	// Model and EnvID are recorded in SessionCreated.
	Model string
	EnvID string
	// Network, when set, returns the environment's connections after a seq
	// (Env.NetworkLog): after each tool call the session records those that ended
	// meanwhile as NetworkAccess events.
	Network func(ctx context.Context, after uint64) ([]egress.Event, error)
	// Interrupted, if set, is asked at each step boundary: a reason stops the
	// session there (cancelled), after its call in flight ended. A subagent's
	// is its parent's correction or replacement (delegate.go).
	Interrupted func() string
	// Durable, if set, makes the session durable: Log's journal takes each event
	// before the loop acts on it, each call records its effect fingerprint, and a
	// session with recorded events resumes (durable.go).
	Durable *Durable
}

// Result is how a session ended.
type Result struct {
	Session    string        `json:"session"`
	StopReason StopReason    `json:"stop_reason"`
	Detail     string        `json:"detail,omitempty"`
	Steps      int           `json:"steps"`
	ToolCalls  int           `json:"tool_calls"`
	Usage      trace.Usage   `json:"usage"`
	Duration   time.Duration `json:"duration_ns"`
	// Answer is the summary a finishing tool call or the model's last words gave.
	Answer string        `json:"answer,omitempty"`
	State  tool.Snapshot `json:"state"`
}

// ErrDetached, as the cause of a durable session's context, stops the session
// without ending it (stop reason detached, no SessionEnded): its driver lets go
// (a coordinator shutting down), and the next driver resumes it.
var ErrDetached = errors.New("the driver let go of the session")

// errWallTime is the cause of the session context's deadline.
var errWallTime = errors.New("wall-time budget exhausted")

// NewSessionID returns a fresh session id.
func NewSessionID() string { return "s-" + rand.Text()[:16] }

// Run runs one session until it stops, and returns why. The error is for a
// session that could not start (bad options); everything that happens once it
// runs is a StopReason.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Policy == nil || o.Tools == nil {
		return nil, errors.New("agent: a session needs a policy and tools")
	}
	if o.Goal == "" {
		return nil, errors.New("agent: a session needs a goal")
	}
	log := o.Log
	if log == nil {
		log = trace.NewLog(trace.LogOptions{Session: NewSessionID()})
	}
	lim := o.Limits.withDefaults()
	start := time.Now()
	// A resumed session has what is left of its wall budget: the time its
	// earlier drivers ran (journal.State.Wall) is spent, not given back by a crash.
	deadline := start.Add(lim.MaxWall)
	if d := o.Durable; d != nil && d.State != nil {
		deadline = deadline.Add(-d.State.Wall)
	}
	ctx, cancel := context.WithDeadlineCause(ctx, deadline, errWallTime)
	defer cancel()

	l := &loop{o: o, lim: lim, log: log, start: start, budget: newBudget(lim, deadline),
		det: newDetector(lim)}
	l.st = &State{Session: log.Session(), Goal: o.Goal, Tools: o.Tools.Defs(), Budget: l.budget, log: log}
	if d := o.Durable; d != nil && d.State != nil && d.State.Seq > 0 {
		if err := l.restore(d.State); err != nil {
			return nil, fmt.Errorf("agent: resume: %w", err)
		}
	}
	return l.run(ctx), nil
}

type loop struct {
	o      Options
	lim    Limits
	log    *trace.Log
	start  time.Time
	budget *Budget
	det    *detector
	st     *State
	answer string
	netSeq uint64 // the last connection recorded (Options.Network)
	// resumed is set for a session continued from its journal (restore).
	resumed bool
	done    *journal.Call // a resumed session's finishing call
	held    *journal.Call // a resumed session's call awaiting approval (continueHeld)
	// goal is the goal's revision; steered the last inbox entry taken (steer.go).
	goal    grant.Goal
	steered int64
	plan    journal.Plan // stale items included; st.Plan is its Current
}

type ending struct {
	reason StopReason
	detail string
}

func (l *loop) run(ctx context.Context) *Result {
	limits, _ := json.Marshal(l.lim)
	var names []string
	for _, d := range l.st.Tools {
		names = append(names, d.Name)
	}
	var end ending
	var stopped bool
	if l.resumed {
		end, stopped = l.recover(ctx)
	} else {
		l.log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: l.log.Session(), Goal: l.o.Goal,
			Policy: l.o.Policy.Name(), Model: l.o.Model, Limits: limits, Tools: names, EnvID: l.o.EnvID})
	}
	for !stopped {
		if e, stop := l.halted(); stop {
			end = e
			break
		}
		if e, stop := l.checkContext(ctx); stop {
			end = e
			break
		}
		if err := l.budget.exhausted(); err != nil {
			end = ending{StopBudgetExhausted, err.Error()}
			break
		}
		if l.takeSteers(ctx, l.st.step, nil); l.log.Halted() != nil {
			continue
		}
		if f := l.o.Interrupted; f != nil {
			if why := f(); why != "" {
				end = ending{StopCancelled, why}
				break
			}
		}
		if l.compact(); l.log.Halted() != nil {
			continue
		}
		if !l.budget.spendStep() {
			end = ending{StopMaxSteps, fmt.Sprintf("%d steps taken", l.lim.MaxSteps)}
			break
		}
		if e, stop := l.step(ctx); stop {
			end = e
			break
		}
	}
	steps, calls := l.budget.counts()
	res := &Result{Session: l.log.Session(), StopReason: end.reason, Detail: end.detail, Steps: steps,
		ToolCalls: calls, Usage: l.budget.Used(), Duration: time.Since(l.start), Answer: l.answer,
		State: l.o.Tools.Snapshot()}
	if res.StopReason == StopPaused || res.StopReason == StopJournal || res.StopReason == StopDetached {
		return res // not ended: a resume continues it
	}
	l.log.Emit(trace.SessionEnded, 0, "", trace.SessionEnd{StopReason: string(res.StopReason), Detail: res.Detail,
		Steps: res.Steps, ToolCalls: res.ToolCalls, Usage: res.Usage, DurationMS: res.Duration.Milliseconds(), Answer: res.Answer})
	return res
}

// checkContext stops a session whose context is done: wall time is a budget, any
// other cause a cancellation.
func (l *loop) checkContext(ctx context.Context) (ending, bool) {
	if ctx.Err() == nil {
		return ending{}, false
	}
	if errors.Is(context.Cause(ctx), errWallTime) {
		return ending{StopBudgetExhausted, fmt.Sprintf("wall time of %s used up", l.lim.MaxWall)}, true
	}
	if errors.Is(context.Cause(ctx), ErrDetached) {
		return ending{StopDetached, context.Cause(ctx).Error()}, true
	}
	return ending{StopCancelled, context.Cause(ctx).Error()}, true
}

// step runs one step: ask the policy, run the call, observe.
func (l *loop) step(ctx context.Context) (ending, bool) {
	l.st.step++
	step := l.st.step
	t0 := time.Now()
	l.log.Emit(trace.TurnStarted, step, "", trace.TurnStart{Budget: l.budget.before(t0)})
	used0 := l.budget.Used()

	// The model's reply is cancelled at once for a new goal: what it decides
	// under the old one is not proposed.
	pctx, unwatch := l.watch(ctx, changesGoal)
	defer unwatch()
	d, err := l.o.Policy.Next(pctx, l.st)
	steered := errors.Is(context.Cause(pctx), errSteered)
	unwatch()
	if ctx.Err() == nil && (steered || pending(l.inbox(), changesGoal)) {
		l.log.Emit(trace.TurnCancelled, step, "", trace.TurnEnd{DurationMS: time.Since(t0).Milliseconds(), State: l.o.Tools.Snapshot(),
			Usage: usageSince(l.budget.Used(), used0), Error: errSteered.Error(), ErrorClass: "steered"})
		l.takeSteers(ctx, step, func(k grant.Steer) (trace.SafePoint, bool) {
			return trace.SafePoint{Action: trace.SafeStreamCancelled,
				Detail: "the model's reply was cancelled; the next one is asked under the new goal"}, true
		})
		return ending{}, false
	}
	if err == nil && d.Plan != nil {
		if err = l.updatePlan(step, d.Plan); err == nil && l.log.Halted() != nil {
			e, _ := l.halted()
			return e, true
		}
	}
	if err != nil {
		e := l.classify(ctx, err)
		typ := trace.TurnFailed
		if e.reason == StopCancelled {
			typ = trace.TurnCancelled
		}
		l.log.Emit(typ, step, "", trace.TurnEnd{DurationMS: time.Since(t0).Milliseconds(), State: l.o.Tools.Snapshot(),
			Usage: usageSince(l.budget.Used(), used0), Error: err.Error(), ErrorClass: errorClass(err)})
		return e, true
	}
	if d.Text != "" {
		l.answer = d.Text
	}
	if d.Stop {
		l.log.Emit(trace.ToolCallProposed, step, "", d)
		l.log.Emit(trace.TurnCompleted, step, "", trace.TurnEnd{DurationMS: time.Since(t0).Milliseconds(),
			State: l.o.Tools.Snapshot(), Usage: usageSince(l.budget.Used(), used0)})
		return ending{StopPolicy, d.Reason}, true
	}
	if d.CallID == "" {
		d.CallID = fmt.Sprintf("call_%d", step)
	}
	d.GoalRevision = l.goal.Revision
	l.log.Emit(trace.ToolCallProposed, step, d.CallID, d)
	if e, stop := l.halted(); stop {
		return e, true
	}

	var out tool.Outcome
	var stop *ending
	var eff *trace.Effect
	var at safePoint
	switch {
	case d.ArgsError != "":
		out = refused(tool.Errorf(tool.EINVAL, false, tool.ActFixArgs,
			"the arguments for %s could not be used (%s); the tool was not run", d.Tool, d.ArgsError))
	case !l.budget.spendToolCall():
		out = refused(tool.Errorf(tool.EBUDGET, false, tool.ActStop, "the tool-call budget (%d) is spent; the tool was not run", l.lim.MaxToolCalls))
		stop = &ending{StopMaxToolCalls, fmt.Sprintf("%d tool calls made", l.lim.MaxToolCalls)}
	default:
		spec, _ := l.o.Tools.Spec(d.Tool)
		ts := trace.ToolStart{Tool: d.Tool, Effect: spec.Effect, Idempotent: spec.Idempotent}
		if l.o.Durable != nil {
			ts.Pre = l.o.Tools.Snapshot().Version
		}
		started := l.log.Emit(trace.ToolExecutionStarted, step, d.CallID, ts)
		if e, stop := l.halted(); stop { // the intent is not recorded: the tool must not run
			return e, true
		}
		l.crash("effect-before", started.Seq)
		// A correction cancels a read-only call at once; any other call runs
		// to its end (callSafePoint).
		cctx, unwatch := l.watch(ctx, func(k grant.Steer) bool { return redirects(k) && ts.Effect == tool.EffectRead })
		defer unwatch()
		out, stop = l.call(cctx, step, tool.Call{ID: d.CallID, Tool: d.Tool, Args: d.Args}, nil)
		cancelled := errors.Is(context.Cause(cctx), errSteered)
		unwatch()
		if stop != nil && stop.reason == StopPaused { // held for a person: the call has not run, resume continues it
			return *stop, true
		}
		l.crash("effect-after", started.Seq)
		eff = l.effect(ctx, ts.Pre)
		if pending(l.inbox(), redirects) {
			at = l.callSafePoint(ctx, started.Seq, d, ts, l.o.Durable.State.Workspace, eff, cancelled)
		}
	}
	e, end := l.complete(ctx, step, t0, used0, d, out, stop, eff, at != nil)
	if at != nil && !end {
		l.takeSteers(ctx, step, at)
	}
	return e, end
}

// updatePlan records the policy's revised plan (PlanUpdated), each item with
// the goal revision it was created under, before the decision it came with.
func (l *loop) updatePlan(step int, items []trace.PlanItem) error {
	u := trace.PlanUpdate{Items: l.plan.Stamp(items, l.goal.Revision), GoalRevision: l.goal.Revision}
	p, err := l.plan.Update(u, l.goal)
	if err != nil {
		return fmt.Errorf("agent: the policy's plan: %w", err)
	}
	if l.log.Emit(trace.PlanUpdated, step, "", u); l.log.Halted() == nil {
		l.plan, l.st.Plan = p, p.Current()
	}
	return nil
}

// complete records a call's result and the end of its turn, and says whether
// the session ends with it.
func (l *loop) complete(ctx context.Context, step int, t0 time.Time, used0 trace.Usage, d Decision, out tool.Outcome,
	stop *ending, eff *trace.Effect, stale bool) (ending, bool) {
	l.log.Emit(trace.ToolExecutionFinished, step, d.CallID, trace.ToolFinish{Result: out.Envelope, Done: out.Done,
		DurationMS: out.Duration.Milliseconds(), Internal: out.Internal, Effect: eff})
	l.network(ctx, step, d.CallID)
	if !stale { // a result for a goal a correction made old is recorded, not fed
		l.st.History = append(l.st.History, Turn{Step: step, Decision: d, Result: out.Envelope})
	}

	snap := l.o.Tools.Snapshot()
	fp := Fingerprint(d, out.Envelope, snap.Version)
	why := l.det.observe(fp, out.Envelope)
	l.log.Emit(trace.TurnCompleted, step, "", trace.TurnEnd{DurationMS: time.Since(t0).Milliseconds(), State: snap,
		Usage: usageSince(l.budget.Used(), used0), Fingerprint: fp})
	switch {
	case out.Done:
		if s := summaryOf(out.Envelope); s != "" {
			l.answer = s
		}
		return ending{StopDone, "finished by " + d.Tool}, true
	case stop != nil:
		return *stop, true
	case why != "":
		return ending{StopNoProgress, why}, true
	}
	return ending{}, false
}

// classify turns a policy error into a stop reason.
func (l *loop) classify(ctx context.Context, err error) ending {
	if e, stop := l.checkContext(ctx); stop {
		return e
	}
	switch {
	case errors.Is(err, ErrBudget):
		return ending{StopBudgetExhausted, err.Error()}
	case errors.Is(err, context.Canceled):
		return ending{StopCancelled, err.Error()}
	}
	return ending{StopModelError, err.Error()}
}

// errorClass names a policy error for the trace: "budget", or model.ErrorClass.
func errorClass(err error) string {
	if errors.Is(err, ErrBudget) {
		return "budget"
	}
	return model.ErrorClass(err)
}

func refused(e *tool.Error) tool.Outcome {
	return tool.Outcome{Envelope: tool.Envelope{OK: false, Data: json.RawMessage("null"), Error: e,
		Refs: []tool.Ref{}, ObservedAt: time.Now()}}
}

func usageSince(now, before trace.Usage) trace.Usage {
	return trace.Usage{Requests: now.Requests - before.Requests, InputTokens: now.InputTokens - before.InputTokens,
		OutputTokens: now.OutputTokens - before.OutputTokens, CostUSD: now.CostUSD - before.CostUSD}
}

func summaryOf(e tool.Envelope) string {
	var v struct {
		Summary string `json:"summary"`
	}
	_ = json.Unmarshal(e.Data, &v)
	return v.Summary
}

// network records the connections that ended since the last call as NetworkAccess
// events of the tool call callID. A connection still open is recorded after the
// call during which it ends. A failure to read the log is recorded, not fatal.
func (l *loop) network(ctx context.Context, step int, callID string) {
	if l.o.Network == nil {
		return
	}
	evs, err := l.o.Network(context.WithoutCancel(ctx), l.netSeq)
	if err != nil {
		l.log.Emit(trace.NetworkAccess, step, callID, map[string]string{"error": err.Error()})
		return
	}
	for _, e := range evs {
		l.log.Emit(trace.NetworkAccess, step, callID, e)
		l.netSeq = max(l.netSeq, e.Seq)
	}
}
