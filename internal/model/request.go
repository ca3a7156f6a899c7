package model

import "context"

// Client sends one request to a model and returns its reply. Adapters and wrappers
// implement it; the agent loop calls it.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Request is one call to a model: the whole conversation so far and the tools on
// offer.
type Request struct {
	Model  string `json:"model"`
	System string `json:"system,omitempty"`
	// Messages is the conversation, oldest first. Every tool call of an assistant
	// message must be answered by the tool messages right after it.
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
	// MaxOutputTokens caps the reply; 0 leaves it to the provider (the Anthropic
	// adapter, whose protocol requires a cap, uses its DefaultMaxTokens).
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// Temperature is sent only when set.
	Temperature *float64 `json:"temperature,omitempty"`
}

// StopReason says why the model stopped, in the same words for every provider.
type StopReason string

const (
	StopEnd       StopReason = "end_turn"   // finished its answer
	StopToolUse   StopReason = "tool_use"   // wants its tool calls run
	StopMaxTokens StopReason = "max_tokens" // hit MaxOutputTokens; the reply is cut
	StopRefusal   StopReason = "refusal"    // refused or was filtered
	StopOther     StopReason = "other"      // anything else; see RawStopReason
)

// Response is a model's reply.
//
// When Complete fails after an HTTP response arrived, it returns the error together
// with a Response whose Meta describes that response (status, request id, and usage
// if the provider reported any), so the caller can account for it.
type Response struct {
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason StopReason `json:"stop_reason"`
	// RawStopReason is the provider's own word (finish_reason or stop_reason).
	RawStopReason string `json:"raw_stop_reason,omitempty"`
	Meta          Meta   `json:"meta"`
	// Trimmed is set by TrimOnOverflow when it had to shorten the conversation: the
	// messages actually sent. The caller should adopt them as its history, or every
	// later turn overflows again.
	Trimmed []Message `json:"trimmed,omitempty"`
}

// Message returns the reply as the assistant message to append to the history.
func (r Response) Message() Message {
	return Message{Role: RoleAssistant, Text: r.Text, ToolCalls: r.ToolCalls}
}
