package agent

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestModelPlan: a model keeps its plan with agent.plan, which the policy
// answers itself: a reply that only plans is answered and the model asked
// again within the step, and the plan goes with the step's decision
// (PlanUpdated, before ToolCallProposed, each item of goal revision 0); a
// plan that breaks a rule (a duplicate id) is answered as an error naming it,
// and the plan stands; a reply that plans and calls a tool does both in one
// step. The step trace shows each revision. The protocol holds throughout:
// every tool call gets its result.
func TestModelPlan(t *testing.T) {
	plan1 := `{"items":[{"id":"read","text":"read calc.py","status":"in_progress"},{"id":"fix","text":"fix add","status":"pending"}]}`
	dup := `{"items":[{"id":"fix","text":"fix add","status":"in_progress"},{"id":"fix","text":"again","status":"pending"}]}`
	plan2 := `{"items":[{"id":"read","text":"read calc.py","status":"done"},{"id":"fix","text":"fix add","status":"done"}]}`
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil,
				modeltest.Turn{Text: "First a plan.", Calls: []modeltest.Call{{Name: "agent_plan", Args: plan1}}},
				modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}},
				modeltest.Turn{Calls: []modeltest.Call{{Name: "agent_plan", Args: dup}, {Name: "patch_apply", Args: fixCalcArgs}}},
				modeltest.Turn{Calls: []modeltest.Call{{Name: "agent_plan", Args: plan2}, {Name: "test_run", Args: `{}`}}},
				modeltest.Turn{Calls: []modeltest.Call{{Name: "task_finish", Args: `{"summary":"add returns a + b"}`}}})
			reg, _ := newMemCalc(t)
			res, evs, steps := session(t, Options{Policy: pol, Tools: reg})
			if res.StopReason != StopDone || res.Steps != 4 || res.ToolCalls != 4 {
				t.Fatalf("%+v", res)
			}
			got := srv.Received()
			if len(got) != 5 || srv.Remaining() != 0 {
				t.Fatalf("%d requests, %d turns left", len(got), srv.Remaining())
			}
			keptProtocol(t, got)
			// Each request carries the conversation's results so far.
			if r := got[1].Results; len(r) != 1 || !strings.Contains(r[0].Content, "the plan is recorded (2 items)") || r[0].IsError {
				t.Fatalf("the plan-only reply was answered %+v", r)
			}
			if r := got[3].Results[2:]; len(r) != 2 || !strings.Contains(r[0].Content, `id "fix" is used twice`) || (p.anthropic && !r[0].IsError) {
				t.Fatalf("the bad plan was answered %+v", r)
			}
			var ups []trace.PlanUpdate
			var order []trace.Type
			for _, e := range evs {
				if e.Type == trace.PlanUpdated || e.Type == trace.ToolCallProposed {
					order = append(order, e.Type)
				}
			}
			ups = eventsOf[trace.PlanUpdate](t, evs, trace.PlanUpdated)
			if len(ups) != 2 || len(ups[0].Items) != 2 || ups[0].Items[0].Status != trace.PlanInProgress || ups[1].Items[1].Status != trace.PlanDone ||
				ups[0].Items[0].GoalRevision != 0 || order[0] != trace.PlanUpdated || order[1] != trace.ToolCallProposed {
				t.Fatalf("plan updates %+v, order %v", ups, order)
			}
			if steps[0].Plan == nil || steps[1].Plan != nil || steps[2].Plan == nil || steps[2].Plan[0].Status != trace.PlanDone {
				t.Fatalf("the step trace shows plans %v / %v / %v", steps[0].Plan, steps[1].Plan, steps[2].Plan)
			}
		})
	}
}

// TestCheckPlan: the rules of a plan, each refusal naming what is wrong.
func TestCheckPlan(t *testing.T) {
	ok := trace.PlanItem{ID: "a", Text: "t", Status: trace.PlanPending}
	many := make([]trace.PlanItem, trace.MaxPlanItems+1)
	for i := range many {
		many[i] = ok
	}
	for name, tc := range map[string]struct {
		items []trace.PlanItem
		want  string
	}{
		"no id":     {[]trace.PlanItem{{Text: "t", Status: "done"}}, "has no id"},
		"no text":   {[]trace.PlanItem{{ID: "a", Status: "done"}}, "has no text"},
		"status":    {[]trace.PlanItem{{ID: "a", Text: "t", Status: "later"}}, "use pending, in_progress or done"},
		"duplicate": {[]trace.PlanItem{ok, ok}, "used twice"},
		"too many":  {many, "more than 64"},
		"long text": {[]trace.PlanItem{{ID: "a", Text: strings.Repeat("x", trace.MaxPlanItemText+1), Status: "done"}}, "shorten it"},
	} {
		if err := trace.CheckPlan(tc.items); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := trace.CheckPlan([]trace.PlanItem{ok}); err != nil {
		t.Fatal(err)
	}
}
