package trace

import (
	"encoding/json"
	"time"

	"github.com/agentbox/agentbox/internal/tool"
)

// Type names an event.
type Type string

// The events of a session, in the order a step produces them.
const (
	SessionCreated        Type = "SessionCreated"        // SessionInfo
	TurnStarted           Type = "TurnStarted"           // TurnStart
	ModelRequestStarted   Type = "ModelRequestStarted"   // ModelRequest
	ModelResponseReceived Type = "ModelResponseReceived" // ModelResponse, one per HTTP attempt
	ModelRetry            Type = "ModelRetry"            // ModelRetryInfo
	ToolCallProposed      Type = "ToolCallProposed"      // Decision
	ToolExecutionStarted  Type = "ToolExecutionStarted"  // ToolStart
	ToolExecutionProgress Type = "ToolExecutionProgress" // ToolProgress: the environment's process of a running call
	ToolExecutionFinished Type = "ToolExecutionFinished" // ToolFinish
	NetworkAccess         Type = "NetworkAccess"         // egress.Event: a connection that ended during the tool call
	TurnCompleted         Type = "TurnCompleted"         // TurnEnd
	TurnFailed            Type = "TurnFailed"            // TurnEnd with Error
	TurnCancelled         Type = "TurnCancelled"         // TurnEnd with Error
	SessionEnded          Type = "SessionEnded"          // SessionEnd

	// A resumed session's first events (package journal, agent.RunSession):
	// RecoveryStarted, a RecoveryReconciled per call or model request left
	// without a result, then RecoverySummary before any new action. A person's
	// resolution of an unknown call is a RecoveryReconciled too.
	RecoveryStarted    Type = "RecoveryStarted"    // RecoveryStart
	RecoveryReconciled Type = "RecoveryReconciled" // Reconcile
	RecoverySummary    Type = "RecoverySummary"    // RecoverySummaryInfo
)

// Event is one fact about a session.
type Event struct {
	Seq int64 `json:"seq"`
	// ID is Session/Seq: the key a durable store de-duplicates appends by.
	ID      string          `json:"id"`
	Session string          `json:"session"`
	Time    time.Time       `json:"time"`
	Type    Type            `json:"type"`
	Step    int             `json:"step,omitempty"`
	CallID  string          `json:"call_id,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	// PrevHash and Hash chain the session's events (package chain): Hash is the
	// sha256 of PrevHash and the event's canonical JSON without Hash, so an
	// edited, removed or reordered event breaks the chain (VerifyEvents).
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash,omitempty"`
}

// SessionInfo describes a session when it is created.
type SessionInfo struct {
	Session string `json:"session"`
	Goal    string `json:"goal"`
	Policy  string `json:"policy"`
	Model   string `json:"model,omitempty"`
	// Limits are the session's budgets as configured (agent.Limits).
	Limits json.RawMessage `json:"limits"`
	Tools  []string        `json:"tools"`
	EnvID  string          `json:"env_id,omitempty"`
}

// TurnStart opens a step.
type TurnStart struct {
	Budget Budget `json:"budget_before"`
}

// Budget is what was left before a step. -1 means unlimited.
type Budget struct {
	StepsLeft        int     `json:"steps_left"`
	ToolsLeft        int     `json:"tools_left"`
	InputTokensLeft  int64   `json:"input_tokens_left"`
	OutputTokensLeft int64   `json:"output_tokens_left"`
	CostLeftUSD      float64 `json:"cost_left_usd"`
	WallLeftMS       int64   `json:"wall_left_ms"`
}

// ModelRequest is recorded before a request is sent, with what was reserved
// from the budget for it.
type ModelRequest struct {
	RequestID            string  `json:"request_id"` // ours, not the provider's
	Model                string  `json:"model"`
	Messages             int     `json:"messages"`
	EstimatedInputTokens int     `json:"estimated_input_tokens"`
	MaxOutputTokens      int     `json:"max_output_tokens"`
	ReservedUSD          float64 `json:"reserved_usd"`
}

// ModelResponse is the accounting record of one HTTP response (model.Meta).
type ModelResponse struct {
	RequestID        string  `json:"request_id"` // ours
	Provider         string  `json:"provider"`
	Model            string  `json:"model"`
	ProviderRequest  string  `json:"provider_request_id,omitempty"`
	ResponseID       string  `json:"response_id,omitempty"`
	Status           int     `json:"status"`
	Attempt          int     `json:"attempt,omitempty"`
	Streamed         bool    `json:"streamed,omitempty"`
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	UsageReported    bool    `json:"usage_reported"`
	CostUSD          float64 `json:"cost_usd"`
	PriceKnown       bool    `json:"price_known"`
	LatencyMS        int64   `json:"latency_ms"`
	TTFTMS           int64   `json:"ttft_ms,omitempty"`
	ErrorClass       string  `json:"error_class,omitempty"`
}

// ModelRetryInfo is a failed attempt about to be repeated.
type ModelRetryInfo struct {
	RequestID    string `json:"request_id"`
	Attempt      int    `json:"attempt"`
	ErrorClass   string `json:"error_class"`
	Status       int    `json:"status,omitempty"`
	ProviderReq  string `json:"provider_request_id,omitempty"`
	BackoffMS    int64  `json:"backoff_ms"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty"`
}

// Decision is what the policy decided in a step: a tool call, or to stop.
type Decision struct {
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	// Text is what the model said alongside (its reasoning, a final answer).
	Text string `json:"text,omitempty"`
	// ArgsError is set when the model's arguments were unusable; the tool did not run.
	ArgsError string `json:"args_error,omitempty"`
	Stop      bool   `json:"stop,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// GoalRevision is the goal revision the call was decided under (the loop
	// sets it): its result is fed to decisions only while that revision fits.
	GoalRevision int `json:"goal_revision,omitempty"`
	// Plan, if not nil, is the policy's whole plan as revised with this
	// decision (empty: none left); the loop records it as PlanUpdated, not here.
	Plan []PlanItem `json:"-"`
}

// ToolStart is recorded before a tool runs, with what a recovering session needs
// to decide whether running it again is safe.
type ToolStart struct {
	Tool       string      `json:"tool"`
	Effect     tool.Effect `json:"effect"`
	Idempotent bool        `json:"idempotent"`
	// Pre is the workspace's content hash (tool.Snapshot.Version) before the
	// call: with Effect.Version after it, the call's effect fingerprint.
	Pre string `json:"pre_version,omitempty"`
}

// ToolProgress is recorded while a call runs, before the loop waits for it:
// the process the environment runs for it (exec.run), which a recovering
// session asks the environment about instead of guessing.
type ToolProgress struct {
	Env     string `json:"env_id"`
	Process string `json:"process_id"`
}

// Effect is the workspace as a call left it: Version its content hash, Diff the
// environment's diff from its start, which re-derives it in a new environment.
// Diff is recorded when Version changed.
type Effect struct {
	Version string `json:"version"`
	Diff    []byte `json:"diff,omitempty"`
	// DiffError is why the diff could not be read.
	DiffError string `json:"diff_error,omitempty"`
}

// ToolFinish is a tool's outcome.
type ToolFinish struct {
	Result     tool.Envelope `json:"result"`
	Done       bool          `json:"done,omitempty"`
	DurationMS int64         `json:"duration_ms"`
	// Internal is operator-only detail (a handler's panic); the model never saw it.
	Internal string `json:"internal,omitempty"`
	// Effect is recorded by a durable session (a journal's driver).
	Effect *Effect `json:"effect,omitempty"`
}

// TurnEnd closes a step.
type TurnEnd struct {
	DurationMS  int64         `json:"duration_ms"`
	State       tool.Snapshot `json:"state"`
	Usage       Usage         `json:"usage"`
	Fingerprint string        `json:"fingerprint,omitempty"`
	Error       string        `json:"error,omitempty"`
	ErrorClass  string        `json:"error_class,omitempty"`
}

// Usage is what a step or a session spent on the model.
type Usage struct {
	Requests     int     `json:"requests"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Add accumulates u2 into u.
func (u *Usage) Add(u2 Usage) {
	u.Requests += u2.Requests
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CostUSD += u2.CostUSD
}

// SessionEnd is the last event of a session.
type SessionEnd struct {
	StopReason string `json:"stop_reason"`
	Detail     string `json:"detail,omitempty"`
	Steps      int    `json:"steps"`
	ToolCalls  int    `json:"tool_calls"`
	Usage      Usage  `json:"usage"`
	DurationMS int64  `json:"duration_ms"`
	Answer     string `json:"answer,omitempty"`
}

// Outcomes of a reconciled call.
const (
	OutcomeSucceeded = "succeeded" // the effect happened (a person said so): the policy sees success
	OutcomeFailed    = "failed"    // it did not (a person said so), or a lost model response: the policy sees a failure
	OutcomeNotRun    = "not_run"   // no effect: the call is decided afresh
	OutcomeRetried   = "retried"   // read-only or idempotent: decided afresh, repeating is safe
	OutcomeUnknown   = "unknown"   // nobody can tell: the session pauses for a person
	// OutcomeStillRunning: the call's process still runs in its environment;
	// the recovering driver waits for it and records its result.
	OutcomeStillRunning = "still_running"
)

// CapabilityProcess is a Reconcile's Capability when the environment told
// the outcome from the call's recorded process (ToolProgress): its result
// follows as the call's ToolExecutionFinished, the process's own.
const CapabilityProcess = "process"

// RecoveryStart opens a recovery: the driver's epoch, the snapshot it started
// from and how many events it replayed.
type RecoveryStart struct {
	Epoch    int64 `json:"epoch"`
	Snapshot int64 `json:"snapshot_seq"`
	Replayed int   `json:"replayed"`
	LastSeq  int64 `json:"last_seq"`
}

// Reconcile is the verdict on a call (or a model request, RequestID) whose
// result was not recorded.
type Reconcile struct {
	Tool      string `json:"tool,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Capability is how the outcome was found: read_only (retried), verifiable
	// (the workspace's content hash against the call's pre-state), process
	// (the environment's word on the call's process: CapabilityProcess), none.
	Capability string `json:"capability"`
	Outcome    string `json:"outcome"`
	// Process is the call's recorded process, for CapabilityProcess.
	Process string `json:"process_id,omitempty"`
	// Pre is the recorded pre-state, Found the workspace's hash now.
	Pre    string `json:"pre_version,omitempty"`
	Found  string `json:"found_version,omitempty"`
	By     string `json:"by"` // "recovery" or "person"
	Detail string `json:"detail,omitempty"`
}

// RecoverySummaryInfo precedes any new action of a resumed session.
type RecoverySummaryInfo struct {
	Epoch      int64    `json:"epoch"`
	Reconciled int      `json:"reconciled"`
	Unknown    []string `json:"unknown,omitempty"`
	// StillRunning are the calls whose process still ran in the environment:
	// waited for, and their results recorded, before any new action.
	StillRunning []string `json:"still_running,omitempty"`
	// Held is the call stopped before it ran for an approval request a person
	// had not answered: it is continued, not reconciled.
	Held string `json:"held,omitempty"`
	// Drift says how the re-derived workspace differs from the recorded one.
	Drift  string `json:"drift,omitempty"`
	Paused bool   `json:"paused"`
	// Compaction names a compaction its driver did not finish: discarded, the
	// full history stands, and it is made again.
	Compaction string `json:"compaction,omitempty"`
}
