package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/trace"
)

// PlanToolName is the tool a model keeps its plan with. ModelPolicy offers it
// and answers it itself: a call is not a step of the session but the plan its
// next decision carries (Decision.Plan), recorded as PlanUpdated.
const PlanToolName = "agent.plan"

// maxPlanReplies is how many replies in a row may only revise the plan before
// the policy stops asking.
const maxPlanReplies = 3

func planToolDef() model.ToolDef {
	return model.ToolDef{Name: PlanToolName,
		Description: "Record your plan for the goal: the whole list of steps each time, each with a short id, what it does and its status (pending, in_progress, done). Steps planned under a goal the person corrected or replaced are dropped from it.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"items":{"type":"array","maxItems":%d,"items":{"type":"object","properties":{"id":{"type":"string","minLength":1,"maxLength":%d},"text":{"type":"string","minLength":1,"maxLength":%d},"status":{"type":"string","enum":["pending","in_progress","done"]}},"required":["id","text","status"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false}`,
			trace.MaxPlanItems, trace.MaxPlanItemID, trace.MaxPlanItemText))}
}

// takePlans separates the reply's agent.plan calls from its other calls: each
// is answered at once (its result goes with the next request), and the last
// usable one is the plan (nil: none).
func takePlans(calls []model.ToolCall) (rest []model.ToolCall, plan []trace.PlanItem, answers []model.ToolResult) {
	for _, c := range calls {
		if c.Name != PlanToolName {
			rest = append(rest, c)
			continue
		}
		if c.ArgsErr != nil {
			answers = append(answers, model.ArgsErrorResult(c))
			continue
		}
		items, err := parsePlan(c.Args)
		if err != nil {
			answers = append(answers, model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
				Content: fmt.Sprintf("error: %v. The plan was not recorded; call %s again with the whole plan.", err, PlanToolName)})
			continue
		}
		plan = items
		answers = append(answers, model.ToolResult{CallID: c.ID, Name: c.Name, Content: fmt.Sprintf("the plan is recorded (%d items)", len(items))})
	}
	return rest, plan, answers
}

func parsePlan(raw json.RawMessage) ([]trace.PlanItem, error) {
	var a struct {
		Items []struct {
			ID     string `json:"id"`
			Text   string `json:"text"`
			Status string `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", trace.ErrPlan, err)
	}
	items := []trace.PlanItem{} // not nil: an empty plan clears it
	for _, it := range a.Items {
		items = append(items, trace.PlanItem{ID: it.ID, Text: it.Text, Status: it.Status})
	}
	return items, trace.CheckPlan(items)
}

// renderPlan is the plan as the model reads it after a goal change.
func renderPlan(items []trace.PlanItem) string {
	if len(items) == 0 {
		return "You have no plan for it: the steps planned under the old goal no longer hold."
	}
	var b strings.Builder
	b.WriteString("Your plan for it:")
	for _, it := range items {
		fmt.Fprintf(&b, "\n- [%s] %s: %s", it.Status, it.ID, it.Text)
	}
	return b.String()
}

// withPlanTool is the tools a model is offered: the session's and agent.plan,
// unless the session has a tool of that name.
func withPlanTool(tools []model.ToolDef) []model.ToolDef {
	if slices.ContainsFunc(tools, func(d model.ToolDef) bool { return d.Name == PlanToolName }) {
		return tools
	}
	return append(tools, planToolDef())
}
