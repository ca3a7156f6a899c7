package model

import (
	"encoding/json"
	"fmt"
)

// Role says who speaks in a Message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool messages carry ToolResults, the answers to the tool calls of the
	// assistant message just before them.
	RoleTool Role = "tool"
)

// Message is one turn of a conversation. User and system messages carry Text;
// assistant messages carry Text, ToolCalls or both; tool messages carry ToolResults
// and nothing else.
type Message struct {
	Role        Role         `json:"role"`
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`
	ToolResults []ToolResult `json:"tool_results,omitempty"`
}

// ToolCall is a model's request to run a tool. Exactly one of Args and ArgsErr is set
// in a Response: Args is the arguments as compact JSON (always an object), ArgsErr
// says why the model's arguments could not be used. A call with ArgsErr still needs a
// ToolResult (ArgsErrorResult builds one) because both protocols reject a
// conversation with an unanswered call.
type ToolCall struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	ArgsErr *ArgsError      `json:"args_error,omitempty"`
}

// ToolResult is the outcome of one tool call, sent back to the model as data.
type ToolResult struct {
	CallID     string     `json:"call_id"`
	Name       string     `json:"name"`
	Content    string     `json:"content"`
	IsError    bool       `json:"is_error,omitempty"`
	Provenance Provenance `json:"provenance"`
}

// Provenance says where a tool result's content came from. Every tool result is
// untrusted whatever its provenance; these fields only tell the model (and a trace
// reader) what it is looking at.
type Provenance struct {
	// Source names the origin of the content: a workspace path, a command line, a
	// URL, an MCP server. Empty when the tool has nothing better than its name.
	Source string `json:"source,omitempty"`
	// Truncated means Content is not the whole output (a tool cut it, or TrimToFit
	// elided it); the model should not treat it as complete evidence.
	Truncated bool `json:"truncated,omitempty"`
}

// ToolDef describes a tool offered to the model, in the shape MCP uses.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is a JSON Schema for the arguments object; nil means
	// {"type":"object","properties":{}}.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// ArgsError reports tool-call arguments that are not a JSON object. It is per call:
// the other calls of the same reply are unaffected.
type ArgsError struct {
	// Raw is the arguments as the model sent them, cut to maxRawArgs bytes.
	Raw string `json:"raw"`
	// Offset is the byte offset of a JSON syntax error, -1 when the text is valid
	// JSON of the wrong type.
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

func (e *ArgsError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("tool arguments are not valid JSON at byte %d: %s", e.Offset, e.Reason)
	}
	return "tool arguments are not a JSON object: " + e.Reason
}

func (e *ArgsError) Unwrap() error { return ErrMalformedArgs }
