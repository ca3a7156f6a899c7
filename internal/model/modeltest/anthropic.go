package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

type anthropicProto struct{}

func (anthropicProto) path() string { return "/v1/messages" }

type anBlockIn struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anReq struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Temperature *float64 `json:"temperature"`
	Stream      bool     `json:"stream"`
}

// check applies the rules the Messages API enforces.
func (anthropicProto) check(h http.Header, body []byte) (Received, bool) {
	var rec Received
	if h.Get("x-api-key") == "" {
		return rec, true
	}
	bad := func(f string, a ...any) { rec.Violations = append(rec.Violations, fmt.Sprintf(f, a...)) }
	if h.Get("anthropic-version") == "" {
		bad("anthropic-version header is required")
	}
	var req anReq
	if err := json.Unmarshal(body, &req); err != nil {
		bad("body is not a messages request: %v", err)
		return rec, false
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	if req.Model == "" {
		bad("model: field required")
	}
	if req.MaxTokens == nil || *req.MaxTokens < 1 {
		bad("max_tokens: field required and at least 1")
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		bad("temperature: must be between 0 and 1")
	}
	if req.System != nil {
		var s string
		if json.Unmarshal(req.System, &s) != nil && !isArray(req.System) {
			bad("system: must be a string or an array of text blocks")
		}
	}
	if len(req.Messages) == 0 {
		bad("messages: at least one message is required")
	}
	var prevUses map[string]bool // tool_use ids of the previous assistant message
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			bad("messages.%d.role: must be user or assistant", i)
			continue
		}
		if i == 0 && m.Role != "user" {
			bad("messages: first message must use the user role")
		}
		if i > 0 && req.Messages[i-1].Role == m.Role {
			bad("messages: roles must alternate between user and assistant (messages %d and %d)", i-1, i)
		}
		var blocks []anBlockIn
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			if text == "" {
				bad("messages.%d.content: text must be non-empty", i)
			}
			blocks = []anBlockIn{{Type: "text", Text: &text}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			bad("messages.%d.content: must be a string or a list of blocks", i)
		}
		uses := map[string]bool{}
		answered := map[string]bool{}
		seenOther := false
		for j, b := range blocks {
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					bad("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
				seenOther = true
			case "tool_use":
				if m.Role != "assistant" {
					bad("messages.%d.content.%d: tool_use blocks are only allowed in assistant messages", i, j)
				}
				if b.ID == "" || !toolNameRE.MatchString(b.Name) || !isObject(b.Input) {
					bad("messages.%d.content.%d: tool_use needs an id, a valid name and an input object", i, j)
				}
				uses[b.ID] = true
				seenOther = true
			case "tool_result":
				if m.Role != "user" {
					bad("messages.%d.content.%d: tool_result blocks are only allowed in user messages", i, j)
				}
				if seenOther {
					bad("messages.%d.content.%d: tool_result blocks must come before any other content", i, j)
				}
				if !prevUses[b.ToolUseID] {
					bad("messages.%d.content.%d: unexpected tool_use_id %q in tool_result blocks: each tool_result must have a corresponding tool_use in the previous message", i, j, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
				var content string
				if b.Content != nil && json.Unmarshal(b.Content, &content) != nil {
					var parts []struct {
						Type string `json:"type"`
						Text string `json:"text"`
					}
					if json.Unmarshal(b.Content, &parts) != nil {
						bad("messages.%d.content.%d: tool_result content must be a string or a list of blocks", i, j)
					}
					for _, p := range parts {
						content += p.Text
					}
				}
				rec.Results = append(rec.Results, Result{CallID: b.ToolUseID, Content: content, IsError: b.IsError})
			default:
				bad("messages.%d.content.%d: unsupported block type %q", i, j, b.Type)
			}
		}
		if m.Role == "user" {
			for id := range prevUses {
				if !answered[id] {
					bad("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, id)
				}
			}
		}
		if m.Role == "assistant" {
			prevUses = uses
		} else {
			prevUses = nil
		}
	}
	if len(prevUses) > 0 {
		bad("messages: the last assistant message has tool_use blocks without a following tool_result")
	}
	for i, t := range req.Tools {
		if !toolNameRE.MatchString(t.Name) {
			bad("tools.%d.name: must match ^[a-zA-Z0-9_-]{1,64}$", i)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if !isObject(t.InputSchema) || json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			bad("tools.%d.input_schema: must be a JSON Schema object with type object", i)
		}
	}
	return rec, false
}

func (anthropicProto) fail(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
			404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	}
	if typ == "" {
		typ = "api_error"
	}
	w.Header().Set("request-id", "req_scripted_error")
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (anthropicProto) reply(w http.ResponseWriter, t Turn, idx int, rec Received) {
	id := "msg_scripted_" + strconv.Itoa(idx)
	w.Header().Set("request-id", "req_scripted_"+strconv.Itoa(idx))
	in, out := usage(t, rec)
	stop := t.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(t.Calls) > 0 {
			stop = "tool_use"
		}
	}
	ids := make([]string, len(t.Calls))
	for i, c := range t.Calls {
		ids[i] = c.ID
		if c.ID == "" {
			ids[i] = fmt.Sprintf("toolu_%d_%d", idx, i)
		}
	}
	if !rec.Stream {
		content := []any{}
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for i, c := range t.Calls {
			var input any = json.RawMessage(c.Args)
			if c.Args == "" {
				input = map[string]any{}
			} else if !json.Valid([]byte(c.Args)) {
				input = c.Args
			}
			content = append(content, map[string]any{"type": "tool_use", "id": ids[i], "name": c.Name, "input": input})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": rec.Model, "content": content,
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": in, "output_tokens": out},
		})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": rec.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": in, "output_tokens": 1}}})
	s.event("ping", map[string]any{"type": "ping"})
	index := 0
	if t.Text != "" {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(t.Text, 6) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": p}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range t.Calls {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": ids[i], "name": c.Name, "input": map[string]any{}}})
		for _, p := range pieces(c.Args, 5) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": out}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
