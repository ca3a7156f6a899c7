package agent

import (
	"context"

	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// Decision is what a policy decides in one step: one tool call (Tool, Args,
// CallID), or Stop with a Reason. A model's unusable arguments are a call with
// ArgsError set: the loop does not run the tool and returns EINVAL as the
// observation.
type Decision = trace.Decision

// Policy decides the next action from the session's state. It is asked once per
// step; every earlier result, failures included, is in State.History.
type Policy interface {
	// Name identifies the policy in the trace ("scripted:good", "openai").
	Name() string
	Next(ctx context.Context, s *State) (Decision, error)
}

// Turn is one step that ran (or refused) a tool call, as the policy sees it.
type Turn struct {
	Step     int
	Decision Decision
	Result   tool.Envelope
}

// State is what a policy decides from.
type State struct {
	Session string
	// Goal is the goal as steered so far, GoalRevision its revision (0 until
	// a person steers the session: agentbox sessions steer).
	Goal         string
	GoalRevision int
	// Plan is the agent's current plan (Decision.Plan revises it): the items
	// of a goal a correction or replacement left behind are not in it.
	Plan []trace.PlanItem
	// Tools are the tools on offer (granted ones only).
	Tools []tool.Def
	// History holds every tool call so far with its result, oldest first.
	History []Turn
	// Summary, once the context was compacted, stands for History[:Summarized]:
	// a policy that keeps a context (ModelPolicy) shows the summary instead.
	Summary    string
	Summarized int
	// Budget is the session's budget; model policies reserve and settle their
	// requests with it.
	Budget *Budget

	step int
	log  *trace.Log
}

// Step returns the current step, 1-based.
func (s *State) Step() int { return s.step }

// Record appends an event of the current step (model requests and responses).
func (s *State) Record(typ trace.Type, callID string, payload any) {
	s.log.Emit(typ, s.step, callID, payload)
}

// Last returns the last turn, if any.
func (s *State) Last() (Turn, bool) {
	if len(s.History) == 0 {
		return Turn{}, false
	}
	return s.History[len(s.History)-1], true
}
