package agent

import (
	"context"
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
// EPERM to the model; an unanswered request stops the session with policy_stop.
// Waiting spends wall time only, never a step or a tool call.
func (l *loop) call(ctx context.Context, step int, c tool.Call) (tool.Outcome, *ending) {
	g := l.o.Permissions
	for round := 1; ; round++ {
		out := l.o.Tools.Call(ctx, c, l.budget.charge)
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
		if o := g.take(c.ID); len(o.labels) > 0 || len(o.flags) > 0 || o.scan != "" {
			if len(o.labels) > 0 || o.scan != "" {
				l.log.Emit(trace.TaintAdded, step, c.ID, trace.TaintInfo{Labels: o.labels, EgressScan: o.scan})
			}
			if len(o.flags) > 0 {
				l.log.Emit(trace.InjectionFlagged, step, c.ID, trace.InjectionInfo{Source: o.source, Flags: o.flags})
			}
		}
		if out.Verdict == nil || out.Verdict.Decision != policy.Ask {
			return out, nil
		}
		if round > maxAskRounds {
			return refused(tool.Errorf(tool.EPERM, false, tool.ActStop, "the call was still asked about after %d approvals: %s",
				maxAskRounds, out.Verdict.Reason())), nil
		}
		reqs := grant.Group(grant.Items(c.ID, c.Tool, *out.Verdict), g.Grants.Goal().Revision, g.nextRequest)
		var denied []string
		for _, r := range reqs {
			l.log.Emit(trace.ApprovalRequested, step, c.ID, r)
			var a grant.Answer
			err := ErrUnanswered
			if g.Approver != nil {
				a, err = g.Approver.Approve(ctx, r)
			}
			if err != nil {
				l.log.Emit(trace.ApprovalResolved, step, c.ID, trace.ApprovalResolution{Answer: grant.Answer{Request: r.ID},
					Unanswered: true, Error: err.Error()})
				var whys []string
				for _, it := range r.Items {
					whys = append(whys, it.Why)
				}
				why := strings.Join(whys, "; ")
				return refused(tool.Errorf(tool.EASK, false, tool.ActStop, "needs a person's approval, and no one answered: %s", why)),
					&ending{StopPolicy, fmt.Sprintf("approval request %s unanswered (%v): %s", r.ID, err, why)}
			}
			gs, err := g.Grants.Resolve(r, a)
			res := trace.ApprovalResolution{Answer: a, Grants: gs}
			if err != nil {
				res.Error = err.Error()
			}
			l.log.Emit(trace.ApprovalResolved, step, c.ID, res)
			for i, d := range a.Decisions {
				if d != policy.Allow || err != nil {
					by := a.By
					if by == "" {
						by = "the approver"
					}
					denied = append(denied, fmt.Sprintf("%s, refused by %s (%s)", r.Items[i].Need, by, r.Items[i].Why))
				}
			}
		}
		if len(denied) > 0 {
			return refused(tool.Errorf(tool.EPERM, false, tool.ActStop, "%s", strings.Join(denied, "; "))), nil
		}
	}
}
