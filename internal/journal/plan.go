package journal

import (
	"fmt"
	"slices"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/trace"
)

// Plan is the agent's plan as its events tell it (PlanUpdated, GoalRevised):
// the current items, and the stale ones made under a goal a correction or a
// replacement left behind, which are kept in the record and never shown to
// the policy as its plan. The loop keeps one with the same methods the fold
// uses, so that what it feeds the policy is what a resume restores.
type Plan []trace.PlanItem

// Current returns the items that are not stale: the plan the policy sees.
func (p Plan) Current() []trace.PlanItem {
	var out []trace.PlanItem
	for _, it := range p {
		if !it.Stale {
			out = append(out, it)
		}
	}
	return out
}

// Stamp sets the goal revision each of items was created under: an item the
// current plan has by its id keeps its own, a new one gets rev.
func (p Plan) Stamp(items []trace.PlanItem, rev int) []trace.PlanItem {
	cur := p.Current()
	out := make([]trace.PlanItem, len(items))
	for i, it := range items {
		it.GoalRevision, it.Stale = rev, false
		if j := slices.IndexFunc(cur, func(c trace.PlanItem) bool { return c.ID == it.ID }); j >= 0 {
			it.GoalRevision = cur[j].GoalRevision
		}
		out[i] = it
	}
	return out
}

// Update returns the plan after u, which lists the whole current plan: the
// stale items stay, the current ones are u's. Each of u's items must be valid
// (trace.CheckPlan), keep the revision its id had in the current plan, or be
// new under the goal's revision g.
func (p Plan) Update(u trace.PlanUpdate, g grant.Goal) (Plan, error) {
	if err := trace.CheckPlan(u.Items); err != nil {
		return p, fmt.Errorf("%w: %v", ErrInvariant, err)
	}
	if u.GoalRevision != g.Revision {
		return p, fmt.Errorf("%w: a plan revised at goal revision %d, the goal is at %d", ErrInvariant, u.GoalRevision, g.Revision)
	}
	for _, it := range u.Items {
		if it.Stale || !slices.Equal(p.Stamp([]trace.PlanItem{it}, g.Revision), []trace.PlanItem{it}) {
			return p, fmt.Errorf("%w: plan item %q of goal revision %d (stale %t) at goal %+v", ErrInvariant, it.ID, it.GoalRevision, it.Stale, g)
		}
	}
	out := slices.DeleteFunc(slices.Clone(p), func(it trace.PlanItem) bool { return !it.Stale })
	return append(out, u.Items...), nil
}

// Steer returns the plan after the goal became g, and the ids of the items
// it made stale: those of a revision a correction or a replacement came after.
func (p Plan) Steer(g grant.Goal) (Plan, []string) {
	out := slices.Clone(p)
	var stale []string
	for i, it := range out {
		if !it.Stale && !g.Fits(it.GoalRevision) {
			out[i].Stale = true
			stale = append(stale, it.ID)
		}
	}
	return out, stale
}
