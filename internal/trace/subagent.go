package trace

// The events of a subagent (agent.delegate), between ToolExecutionStarted and
// ToolExecutionFinished of the delegating call, on its call id.
const (
	SubagentStarted  Type = "SubagentStarted"  // SubagentStart
	SubagentEvent    Type = "SubagentEvent"    // SubagentRecord: one of the subagent's own events
	SubagentFinished Type = "SubagentFinished" // SubagentEnd
)

// SubagentStart names a subagent and its goal.
type SubagentStart struct {
	Session string `json:"session"`
	Goal    string `json:"goal"`
	Policy  string `json:"policy"`
	// Taint and Grants count what it inherited.
	Taint  int `json:"taint"`
	Grants int `json:"grants"`
	// GoalRevision is the parent's goal revision the task was given under.
	GoalRevision int `json:"goal_revision,omitempty"`
}

// SubagentRecord carries one event of the subagent's own log (its steps,
// decisions, approvals and taint), so that the session's log shows every
// decision made on its behalf; a journal folds its TaintAdded into the
// session's taint.
type SubagentRecord struct {
	Session string `json:"session"`
	Event   Event  `json:"event"`
}

// SubagentEnd is how a subagent stopped, and the taint it passed back.
type SubagentEnd struct {
	Session    string `json:"session"`
	StopReason string `json:"stop_reason"`
	Detail     string `json:"detail,omitempty"`
	Steps      int    `json:"steps"`
	ToolCalls  int    `json:"tool_calls"`
	Answer     string `json:"answer,omitempty"`
	// Taint is how many labels the parent gained from it.
	Taint int `json:"taint"`
}
