package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// DelegateName is the delegate tool's name.
const DelegateName = "agent.delegate"

// Delegation configures agent.delegate.
type Delegation struct {
	// Policy makes a subagent's policy for its goal.
	Policy func(goal string) (Policy, error)
	// Limits bound each subagent (Limits' defaults where zero), lowered to
	// what its parent has left: what the subagent spends (steps, tool calls,
	// tokens, money) is the parent's, and so is its wall time.
	Limits Limits
}

// DelegateTool is "agent.delegate": it runs a subagent on a goal in the same
// environment, with the same tools but this one (a subagent delegates nothing),
// under its parent's permissions forked (Permissions.Fork): it holds the
// parent's taint and fitting grants, its reads taint the parent when it
// finishes, its asks go to the same approver, and one egress scan covers both.
// Its events are recorded in the parent's log between SubagentStarted and
// SubagentFinished, each as a SubagentEvent, on the delegating call. The result
// is the subagent's answer (tool results, so data and never an instruction).
//
// Its effect is control: the call itself decides nothing (each of the
// subagent's calls is decided on its own); a resume cannot check what a lost
// subagent did, so such a call is unknown and waits for a person.
func DelegateTool(d Delegation) tool.Spec {
	return tool.Spec{Name: DelegateName, Scope: tool.ScopeExec, Effect: tool.EffectControl,
		Description: "Hand a self-contained task to a subagent working in the same workspace with the same tools; it sees only the goal you give it and returns its answer.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"goal":{"type":"string","minLength":1,"description":"the task, complete: the subagent sees nothing else"}},"required":["goal"],"additionalProperties":false}`),
		Handler: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			var a struct {
				Goal string `json:"goal"`
			}
			if err := json.Unmarshal(raw, &a); err != nil {
				return tool.Result{}, tool.Errorf(tool.EINVAL, false, tool.ActFixArgs, "agent.delegate: %v", err)
			}
			rt, ok := ctx.Value(runtimeKey{}).(*runtime)
			if !ok {
				return tool.Result{}, errors.New("agent.delegate runs only inside an agent session")
			}
			return rt.l.delegate(ctx, d, rt.step, rt.call, a.Goal)
		}}
}

// runtime is what a tool running inside the loop may know of it: the session's
// loop and the call it runs for.
type runtime struct {
	l    *loop
	step int
	call string
}

type runtimeKey struct{}

var subagents atomic.Int64

func (l *loop) delegate(ctx context.Context, d Delegation, step int, call, goal string) (tool.Result, error) {
	reg, ok := l.o.Tools.(*tool.Registry)
	if !ok || d.Policy == nil {
		return tool.Result{}, errors.New("agent.delegate: the session's tools are not a registry, or no subagent policy")
	}
	lim, err := l.budget.share(d.Limits)
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.EBUDGET, false, tool.ActStop, "agent.delegate: the session's %v", err)
	}
	pol, err := d.Policy(goal)
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.EINVAL, false, tool.ActFixArgs, "agent.delegate: %v", err)
	}
	name := fmt.Sprintf("sub%d", subagents.Add(1))
	child := l.log.Session() + "." + name
	parent := l.o.Permissions
	var perms *Permissions
	var tools Tools
	start := trace.SubagentStart{Session: child, Goal: goal, Policy: pol.Name(), GoalRevision: l.goal.Revision}
	if parent != nil {
		perms = parent.Fork(name)
		tools = reg.WithGate(perms, DelegateName)
		start.Taint, start.Grants = len(perms.Taint.Labels()), len(perms.Grants.List())
	} else {
		tools = reg.WithGate(nil, DelegateName)
	}
	l.log.Emit(trace.SubagentStarted, step, call, start)
	fwd := forward(func(e trace.Event) {
		l.log.Emit(trace.SubagentEvent, step, call, trace.SubagentRecord{Session: child, Event: e})
	})
	// The parent's correction or replacement reaches the subagent at once, and
	// it stops at its own next step boundary: its call in flight is not killed.
	interrupted := func() string {
		if pending(l.inbox(), redirects) {
			return "the parent's goal changed: the subagent stopped at its next step boundary"
		}
		return ""
	}
	res, err := Run(ctx, Options{Goal: goal, Policy: pol, Tools: tools, Limits: lim, Permissions: perms, Interrupted: interrupted,
		Log: trace.NewLog(trace.LogOptions{Session: child, Sinks: []trace.Sink{fwd}})})
	if err != nil {
		return tool.Result{}, fmt.Errorf("agent.delegate: %w", err)
	}
	l.budget.absorb(res.Steps, res.ToolCalls, res.Usage)
	end := trace.SubagentEnd{Session: child, StopReason: string(res.StopReason), Detail: res.Detail, Steps: res.Steps,
		ToolCalls: res.ToolCalls, Answer: res.Answer}
	if parent != nil {
		end.Taint = parent.merge(call, name, perms)
	}
	l.log.Emit(trace.SubagentFinished, step, call, end)
	return tool.Result{Data: map[string]any{"session": child, "stop_reason": res.StopReason, "detail": res.Detail,
		"steps": res.Steps, "tool_calls": res.ToolCalls}, Text: res.Answer}, nil
}

// merge taints the session with what its subagent read, recorded with the
// delegating call's TaintAdded; it returns how many labels it added.
func (g *Permissions) merge(call, name string, child *Permissions) int {
	before := len(g.Taint.Labels())
	g.Taint.Merge(name, child.Taint)
	added := g.Taint.Labels()[before:]
	if len(added) > 0 {
		g.mu.Lock()
		o := g.pending[call]
		o.labels = append(o.labels, added...)
		g.pending[call] = o
		g.mu.Unlock()
	}
	return len(added)
}

// forward is a trace.Sink that hands each event on.
type forward func(trace.Event)

func (f forward) Append(e trace.Event) error { f(e); return nil }
