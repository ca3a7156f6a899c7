package trace

import (
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/injection"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/taint"
)

// The events of the permission layer, between ToolExecutionStarted and
// ToolExecutionFinished of the call they are about (the registry decides a call
// as it is made).
const (
	CallDecided       Type = "CallDecided"       // CallDecision
	ApprovalRequested Type = "ApprovalRequested" // grant.Request
	ApprovalResolved  Type = "ApprovalResolved"  // ApprovalResolution
	TaintAdded        Type = "TaintAdded"        // TaintInfo
	InjectionFlagged  Type = "InjectionFlagged"  // InjectionInfo
)

// CallDecision is the permission policy's verdict on one call, with every need's
// risk and its inputs, and the goal revision it was made under.
type CallDecision struct {
	Tool         string         `json:"tool"`
	Verdict      policy.Verdict `json:"verdict"`
	GoalRevision int            `json:"goal_revision"`
}

// ApprovalResolution is the answer to a request and the grants it gave.
type ApprovalResolution struct {
	Answer grant.Answer  `json:"answer"`
	Grants []grant.Grant `json:"grants,omitempty"`
	// Unanswered: nobody answered (no approver, or the approvals file has no
	// entry); the session stops.
	Unanswered bool   `json:"unanswered,omitempty"`
	Error      string `json:"error,omitempty"`
}

// TaintInfo lists the labels a call's result added to the session's taint.
type TaintInfo struct {
	Labels []taint.Label `json:"labels"`
	// EgressScan is "on" when the call turned the environment's egress scan on
	// (agent.Permissions.ScanEgress), or why it could not.
	EgressScan string `json:"egress_scan,omitempty"`
}

// InjectionInfo is what the injection detector flagged in a call's result: a
// signal for the report, not a decision.
type InjectionInfo struct {
	Source string           `json:"source"`
	Flags  []injection.Flag `json:"flags"`
}
