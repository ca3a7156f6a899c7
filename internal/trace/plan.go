package trace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PlanUpdated records the agent's plan as its policy revised it (PlanUpdate):
// the items of the current goal, each with the goal revision it was created
// under. A correction or a replacement of the goal makes the items of older
// revisions stale (GoalRevision.StalePlan): kept in the record, no longer
// shown to the policy as its plan.
const PlanUpdated Type = "PlanUpdated"

// The statuses of a plan item.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanDone       = "done"
)

// Plan bounds: what a model may put in a plan, so that it cannot grow the
// journal and every later request without end.
const (
	MaxPlanItems    = 64
	MaxPlanItemText = 1 << 10
	MaxPlanItemID   = 64
)

// PlanItem is one step of the agent's plan.
type PlanItem struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"`
	// GoalRevision is the revision the item was created under (the loop sets
	// it); Stale is set once a correction or replacement came after it.
	GoalRevision int  `json:"goal_revision"`
	Stale        bool `json:"stale,omitempty"`
}

// PlanUpdate is the whole current plan after a revision by the policy: an
// item it no longer lists is gone, one it lists with a new id is new.
type PlanUpdate struct {
	Items []PlanItem `json:"items"`
	// GoalRevision is the goal's revision when the plan was revised.
	GoalRevision int `json:"goal_revision"`
}

// ErrPlan: a plan a policy proposed is not usable.
var ErrPlan = errors.New("the plan is not usable")

// CheckPlan checks the items a policy (a model) proposes as its plan: at most
// MaxPlanItems, each with an id unique in the plan, a text and a known status.
func CheckPlan(items []PlanItem) error {
	if len(items) > MaxPlanItems {
		return fmt.Errorf("%w: %d items, more than %d: merge some", ErrPlan, len(items), MaxPlanItems)
	}
	var ids []string
	for i, it := range items {
		switch {
		case strings.TrimSpace(it.ID) == "":
			return fmt.Errorf("%w: item %d has no id: give each item a short id of its own", ErrPlan, i+1)
		case len(it.ID) > MaxPlanItemID:
			return fmt.Errorf("%w: item %d's id is %d bytes, more than %d", ErrPlan, i+1, len(it.ID), MaxPlanItemID)
		case slices.Contains(ids, it.ID):
			return fmt.Errorf("%w: id %q is used twice: ids are unique in a plan", ErrPlan, it.ID)
		case strings.TrimSpace(it.Text) == "":
			return fmt.Errorf("%w: item %q has no text: say what the step does", ErrPlan, it.ID)
		case len(it.Text) > MaxPlanItemText:
			return fmt.Errorf("%w: item %q's text is %d bytes, more than %d: shorten it", ErrPlan, it.ID, len(it.Text), MaxPlanItemText)
		case it.Status != PlanPending && it.Status != PlanInProgress && it.Status != PlanDone:
			return fmt.Errorf("%w: item %q has status %q: use pending, in_progress or done", ErrPlan, it.ID, it.Status)
		}
		ids = append(ids, it.ID)
	}
	return nil
}
