package trace

import "time"

// The events of steering: a person's message to a running session, taken from
// the journal's inbox (agentbox sessions steer) at a safe point.
const (
	GoalRevised   Type = "GoalRevised"   // GoalRevision: supplement, correct, replace
	SteerAnswered Type = "SteerAnswered" // SteerAnswer: ask, the goal unchanged
)

// SteerRequest is one message of a session's steering inbox.
type SteerRequest struct {
	// ID numbers the inbox's entries: each is taken once, in order.
	ID      int64     `json:"id"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

// The safe points a steer is taken at (seed 004): what the runtime did with
// what was running when the message came.
const (
	SafeBoundary        = "step_boundary"          // nothing was running
	SafeStreamCancelled = "model_stream_cancelled" // the model's reply was cancelled at once
	SafeReadCancelled   = "read_cancelled"         // a read-only call was cancelled; its result is not fed
	SafeWriteKept       = "write_kept"             // a write finished and stays
	SafeWriteRolledBack = "write_rolled_back"      // a write finished and was undone (its result hash was the workspace's)
	SafeAwaited         = "awaited"                // a call that must not be killed ran to its end
	SafeHeldDropped     = "held_call_dropped"      // a call awaiting a person's approval is not run
	SafeSubagentStopped = "subagent_stopped"       // a subagent stopped at its own next step boundary
)

// SafePoint is where a steer was taken and what was done with the call or
// model request in flight.
type SafePoint struct {
	Action string `json:"action"`
	Call   string `json:"call,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Base and Result are the workspace's content hashes before and after the
	// write in flight; Now what it is after the safe point (Base if rolled back).
	Base   string `json:"base_version,omitempty"`
	Result string `json:"result_version,omitempty"`
	Now    string `json:"version,omitempty"`
	// Stale are calls of an older revision whose results arrived after the
	// goal changed: recorded, never fed to decisions under the new goal.
	Stale  []string `json:"stale,omitempty"`
	Detail string   `json:"detail"`
	// Effect is the workspace after a rollback: what a resume re-derives.
	Effect *Effect `json:"effect,omitempty"`
}

// GoalRevision is a change of the session's goal.
type GoalRevision struct {
	Steer    SteerRequest `json:"steer"`
	Revision int          `json:"goal_revision"`
	// Epoch is the revision of the last correction or replacement: calls and
	// grants of an older revision no longer fit.
	Epoch int `json:"goal_epoch"`
	// Goal is the goal as the policy sees it from now on.
	Goal      string    `json:"goal"`
	SafePoint SafePoint `json:"safe_point"`
	// Dropped are the grants that no longer fit the goal, StalePlan the plan
	// items (PlanItem.ID) made under an older revision that became stale.
	Dropped   []string `json:"dropped_grants,omitempty"`
	StalePlan []string `json:"stale_plan,omitempty"`
}

// SteerAnswer is the session's answer to an ask: its progress, the goal unchanged.
type SteerAnswer struct {
	Steer    SteerRequest `json:"steer"`
	Revision int          `json:"goal_revision"`
	Answer   string       `json:"answer"`
}
