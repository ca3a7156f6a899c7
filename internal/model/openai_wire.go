package model

import (
	"encoding/json"
)

// The request side of OpenAI Chat Completions.

type oaRequest struct {
	Model               string          `json:"model"`
	Messages            []oaMessage     `json:"messages"`
	Tools               []oaTool        `json:"tools,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *oaStreamOption `json:"stream_options,omitempty"`
}

type oaStreamOption struct {
	IncludeUsage bool `json:"include_usage"`
}

// oaMessage always carries content as a string: "" rather than null for an
// assistant message with only tool calls, because some compatible servers reject a
// null content.
type oaMessage struct {
	Role       string       `json:"role"`
	Content    string       `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string    `json:"type"`
	Function oaToolDef `json:"function"`
}

type oaToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func schemaOf(t ToolDef) json.RawMessage {
	if t.InputSchema == nil {
		return emptySchema
	}
	return t.InputSchema
}

func encodeOpenAI(req Request, stream, maxCompletion bool) ([]byte, toolNames, error) {
	if err := validate(req); err != nil {
		return nil, toolNames{}, err
	}
	names := newToolNames(req.Tools, req.Messages)
	w := oaRequest{Model: req.Model, Temperature: req.Temperature}
	if maxCompletion {
		w.MaxCompletionTokens = req.MaxOutputTokens
	} else {
		w.MaxTokens = req.MaxOutputTokens
	}
	if stream {
		w.Stream = true
		w.StreamOptions = &oaStreamOption{IncludeUsage: true}
	}
	if sys := systemPrompt(req); sys != "" {
		w.Messages = append(w.Messages, oaMessage{Role: "system", Content: sys})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			w.Messages = append(w.Messages, oaMessage{Role: string(m.Role), Content: m.Text})
		case RoleAssistant:
			om := oaMessage{Role: "assistant", Content: m.Text}
			for _, c := range m.ToolCalls {
				om.ToolCalls = append(om.ToolCalls, oaToolCall{ID: c.ID, Type: "function",
					Function: oaFunction{Name: names.wire(c.Name), Arguments: string(wireArgs(c))}})
			}
			w.Messages = append(w.Messages, om)
		case RoleTool:
			for _, r := range m.ToolResults {
				r.Name = names.wire(r.Name)
				w.Messages = append(w.Messages, oaMessage{Role: "tool", ToolCallID: r.CallID, Content: RenderToolResult(r)})
			}
		}
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, oaTool{Type: "function", Function: oaToolDef{
			Name: names.wire(t.Name), Description: t.Description, Parameters: schemaOf(t)}})
	}
	body, err := marshal(w)
	if err != nil {
		return nil, toolNames{}, invalidf("encode: %v", err)
	}
	return body, names, nil
}
