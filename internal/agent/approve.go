package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// maxAskRounds bounds how often one call is asked about and made again: each
// round's grants must let the call further (a release is asked only once the
// host is granted), and no policy needs more.
const maxAskRounds = 4

// call makes one tool call through the registry, which decides it (the Permissions is
// its gate). While the verdict is ask, it turns the asks into approval requests,
// records them, waits for the Approver, records the answers and the grants they
// give, and makes the same call again under the same id. A refused item returns
// EPERM to the model; an unanswered request stops the session with policy_stop;
// a request awaiting a person in a durable session pauses it (the call has not
// run, and resume continues it). Waiting spends wall time only, never a step or
// a tool call.
//
// held are the requests of a call that a paused session had asked already
// (resume): they are answered first, not asked again, and then the call is made.
func (l *loop) call(ctx context.Context, step int, c tool.Call, held []grant.Request) (tool.Outcome, *ending) {
	g := l.o.Permissions
	for round := 1; ; round++ {
		reqs, asked := held, true
		if round > 1 || len(held) == 0 {
			cctx := tool.WithProgress(context.WithValue(ctx, runtimeKey{}, &runtime{l: l, step: step, call: c.ID}), l.progressed(step, c.ID))
			out := l.o.Tools.Call(cctx, c, l.budget.charge)
			if out.Verdict != nil {
				rev := 0
				if g != nil {
					rev = g.Grants.Goal().Revision
				}
				l.log.Emit(trace.CallDecided, step, c.ID, trace.CallDecision{Tool: c.Tool, Verdict: *out.Verdict, GoalRevision: rev})
			}
			if g == nil {
				return out, nil
			}
			l.observed(step, c.ID)
			if out.Verdict == nil || out.Verdict.Decision != policy.Ask {
				return out, nil
			}
			if round > maxAskRounds {
				return refused(tool.Errorf(tool.EPERM, false, tool.ActStop, "the call was still asked about after %d approvals: %s",
					maxAskRounds, out.Verdict.Reason())), nil
			}
			items := grant.Items(c.ID, c.Tool, *out.Verdict)
			if round == 1 {
				items = append(items, l.queuedAsks(ctx, items)...)
			}
			reqs, asked = grant.Group(items, g.Grants.Goal().Revision, g.nextRequest), false
		}
		denied, end := l.ask(ctx, step, c.ID, reqs, asked)
		if end != nil {
			return refused(tool.Errorf(tool.EASK, false, tool.ActStop, "needs a person's approval: %s", end.detail)), end
		}
		if len(denied) > 0 {
			return refused(tool.Errorf(tool.EPERM, false, tool.ActStop, "%s", strings.Join(denied, "; "))), nil
		}
	}
}

// Queued is a policy that knows the calls it will propose next without being
// asked again (a model reply's further tool calls): the loop puts their
// low-risk asks to the person together with the current call's, so that a run
// of them is one question (seed 004: low-risk actions in a row are presented
// together). Only session grants come of it: a queued call's one-time or
// higher-risk needs are asked when it is made.
type Queued interface {
	Queued() []Decision
}

// queuedAsks returns the asks of the policy's queued calls that join the
// current call's request: when every item of it is low-risk, those of the
// queued calls after it, up to the first that is not all low-risk (or that a
// grant or rule already decides). The queued calls are judged, not run.
func (l *loop) queuedAsks(ctx context.Context, items []grant.Item) []grant.Item {
	q, ok := l.o.Policy.(Queued)
	j, jok := l.o.Tools.(interface {
		Judge(context.Context, tool.Call) (policy.Verdict, bool)
	})
	if _, file := l.o.Permissions.Approver.(ApprovalsFile); !ok || !jok || file || !allLow(items) {
		return nil // an approvals file answers item by item: nothing to gather
	}
	var out []grant.Item
	for _, d := range q.Queued() {
		if d.CallID == "" || d.ArgsError != "" {
			break
		}
		v, ok := j.Judge(ctx, tool.Call{ID: d.CallID, Tool: d.Tool, Args: d.Args})
		if !ok || v.Decision != policy.Ask {
			break
		}
		its := grant.Items(d.CallID, d.Tool, v)
		if !allLow(its) {
			break
		}
		out = append(out, its...)
	}
	return out
}

func allLow(items []grant.Item) bool {
	for _, it := range items {
		if it.Once || it.Risk.Score >= grant.LowRisk {
			return false
		}
	}
	return len(items) > 0
}

// observed records what the result of a call brought: taint, the egress scan,
// injection flags.
func (l *loop) observed(step int, call string) {
	o := l.o.Permissions.take(call)
	if len(o.labels) > 0 || o.scan != "" {
		l.log.Emit(trace.TaintAdded, step, call, trace.TaintInfo{Labels: o.labels, EgressScan: o.scan})
	}
	if len(o.flags) > 0 {
		l.log.Emit(trace.InjectionFlagged, step, call, trace.InjectionInfo{Source: o.source, Flags: o.flags})
	}
}

// ask records each request (unless asked, by a driver before this one), has the
// Approver answer it, and records the answer and the grants it gives. It returns
// the items refused, or how the session ends: paused while a request awaits a
// person (durable sessions only), policy_stop when nobody answers.
func (l *loop) ask(ctx context.Context, step int, call string, reqs []grant.Request, asked bool) ([]string, *ending) {
	g := l.o.Permissions
	var denied []string
	for _, r := range reqs {
		if !asked {
			l.log.Emit(trace.ApprovalRequested, step, call, r)
		}
		var a grant.Answer
		err := ErrUnanswered
		if g.Approver != nil {
			a, err = g.Approver.Approve(ctx, r)
		}
		why := whyAsked(r)
		if errors.Is(err, ErrAwaiting) && l.o.Durable != nil {
			return nil, &ending{StopPaused, fmt.Sprintf("approval request %s awaits a person (%s): answer it with agentbox sessions approve|deny DIR %s, then agentbox resume DIR",
				r.ID, why, r.ID)}
		}
		if e, stop := l.checkContext(ctx); err != nil && stop {
			return nil, &e // cancelled, or let go (still awaiting for the next driver), while waiting: not unanswered
		}
		if err != nil {
			l.log.Emit(trace.ApprovalResolved, step, call, trace.ApprovalResolution{Answer: grant.Answer{Request: r.ID},
				Unanswered: true, Error: err.Error()})
			return nil, &ending{StopPolicy, fmt.Sprintf("approval request %s unanswered (%v): %s", r.ID, err, why)}
		}
		gs, err := g.Grants.Resolve(r, a)
		res := trace.ApprovalResolution{Answer: a, Grants: gs}
		if err != nil {
			res.Error = err.Error()
		}
		l.log.Emit(trace.ApprovalResolved, step, call, res)
		for i, d := range a.Decisions {
			if (d != policy.Allow || err != nil) && r.Items[i].Call == call { // a queued call's item is its own
				by := a.By
				if by == "" {
					by = "the approver"
				}
				denied = append(denied, fmt.Sprintf("%s, refused by %s (%s)", r.Items[i].Need, by, r.Items[i].Why))
			}
		}
	}
	return denied, nil
}

func whyAsked(r grant.Request) string {
	var whys []string
	for _, it := range r.Items {
		whys = append(whys, it.Why)
	}
	return strings.Join(whys, "; ")
}
