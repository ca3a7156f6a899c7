package agent

import (
	"time"
)

// Limits are a session's budgets and its no-progress thresholds. The zero value is
// usable: counts and wall time take the defaults below; zero token and money
// limits mean no limit on those (the step limit still bounds model requests).
type Limits struct {
	MaxSteps        int           `json:"max_steps"`
	MaxToolCalls    int           `json:"max_tool_calls"`
	MaxInputTokens  int64         `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int64         `json:"max_output_tokens,omitempty"`
	MaxCostUSD      float64       `json:"max_cost_usd,omitempty"`
	MaxWall         time.Duration `json:"max_wall_ns"`
	// NoProgressWindow is how many identical fingerprints in a row end the
	// session; RepeatedErrors how many identical tool errors in a row.
	NoProgressWindow int `json:"no_progress_window"`
	RepeatedErrors   int `json:"repeated_errors"`
	// CompactAfter compacts the context the policy sees once it holds this
	// many results since the last compaction (compact.go); 0: never.
	CompactAfter int `json:"compact_after,omitempty"`
}

// Defaults of Limits.
const (
	DefaultMaxSteps         = 50
	DefaultMaxToolCalls     = 100
	DefaultMaxWall          = 30 * time.Minute
	DefaultNoProgressWindow = 3
	DefaultRepeatedErrors   = 3
)

func (l Limits) withDefaults() Limits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.MaxToolCalls <= 0 {
		l.MaxToolCalls = DefaultMaxToolCalls
	}
	if l.MaxWall <= 0 {
		l.MaxWall = DefaultMaxWall
	}
	if l.NoProgressWindow <= 1 {
		l.NoProgressWindow = DefaultNoProgressWindow
	}
	if l.RepeatedErrors <= 1 {
		l.RepeatedErrors = DefaultRepeatedErrors
	}
	return l
}

// StopReason says why a session ended.
type StopReason string

const (
	StopDone            StopReason = "done"             // a control tool (task.finish) ended the task
	StopMaxSteps        StopReason = "max_steps"        // the step budget is spent
	StopMaxToolCalls    StopReason = "max_tool_calls"   // the tool-call budget is spent
	StopBudgetExhausted StopReason = "budget_exhausted" // tokens, money or wall time
	StopNoProgress      StopReason = "no_progress"      // repeating itself
	StopModelError      StopReason = "model_error"      // the model failed for good (after retries), or refused the key
	StopCancelled       StopReason = "cancelled"        // the caller cancelled the session
	StopPolicy          StopReason = "policy_stop"      // the policy chose to stop
	// A durable session's: paused until a person resolves a call whose outcome
	// recovery could not tell (agentbox sessions resolve), or stopped because its
	// journal refused an event (a newer driver took the session: fenced), or
	// let go by its driver (ErrDetached).
	StopPaused   StopReason = "paused"
	StopJournal  StopReason = "journal_error"
	StopDetached StopReason = "detached"
)
