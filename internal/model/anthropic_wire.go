package model

import (
	"encoding/json"
	"strings"
)

// The request side of the Anthropic Messages API.

type anRequest struct {
	Model       string      `json:"model"`
	MaxTokens   int         `json:"max_tokens"`
	System      string      `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
	Stream      bool        `json:"stream,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

// anBlock is a text, tool_use or tool_result content block; each type sets only its
// own fields.
type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// encodeAnthropic maps the conversation onto the protocol: the system prompt (with
// leading system messages) goes to the top-level field, tool messages become user
// messages of tool_result blocks, and consecutive messages of one role merge into
// one, so tool results and a following user text share a turn as the protocol wants.
func encodeAnthropic(req Request, stream bool, defaultMax int) ([]byte, toolNames, error) {
	if err := validate(req); err != nil {
		return nil, toolNames{}, err
	}
	names := newToolNames(req.Tools, req.Messages)
	w := anRequest{Model: req.Model, MaxTokens: req.MaxOutputTokens, Temperature: req.Temperature, Stream: stream}
	if w.MaxTokens == 0 {
		w.MaxTokens = defaultMax
	}
	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}
	msgs := req.Messages
	for len(msgs) > 0 && msgs[0].Role == RoleSystem {
		system = append(system, msgs[0].Text)
		msgs = msgs[1:]
	}
	if needsNotice(req) {
		system = append(system, ToolResultNotice)
	}
	w.System = strings.Join(system, "\n\n")

	for i, m := range msgs {
		var role string
		var blocks []anBlock
		switch m.Role {
		case RoleSystem:
			return nil, toolNames{}, invalidf("message %d: the Messages API takes system text only before the conversation", i)
		case RoleUser:
			role, blocks = "user", []anBlock{{Type: "text", Text: m.Text}}
		case RoleAssistant:
			role = "assistant"
			if m.Text != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: c.ID, Name: names.wire(c.Name), Input: wireArgs(c)})
			}
		case RoleTool:
			role = "user"
			for _, r := range m.ToolResults {
				r.Name = names.wire(r.Name)
				blocks = append(blocks, anBlock{Type: "tool_result", ToolUseID: r.CallID, Content: RenderToolResult(r), IsError: r.IsError})
			}
		}
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
			continue
		}
		if len(w.Messages) == 0 && role != "user" {
			return nil, toolNames{}, invalidf("the Messages API needs the conversation to start with a user message")
		}
		w.Messages = append(w.Messages, anMessage{Role: role, Content: blocks})
	}
	if len(w.Messages) == 0 {
		return nil, toolNames{}, invalidf("no messages besides system text")
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, anTool{Name: names.wire(t.Name), Description: t.Description, InputSchema: schemaOf(t)})
	}
	body, err := marshal(w)
	if err != nil {
		return nil, toolNames{}, invalidf("encode: %v", err)
	}
	return body, names, nil
}
