package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
)

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

type openaiProto struct{}

func (openaiProto) path() string { return "/v1/chat/completions" }

type oaReq struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// check applies the rules OpenAI enforces on a chat completion request.
func (openaiProto) check(_ http.Header, body []byte) (Received, bool) {
	var rec Received
	bad := func(f string, a ...any) { rec.Violations = append(rec.Violations, fmt.Sprintf(f, a...)) }
	var req oaReq
	if err := json.Unmarshal(body, &req); err != nil {
		bad("body is not a chat completion request: %v", err)
		return rec, false
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	rec.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	if req.Model == "" {
		bad("model is required")
	}
	if len(req.Messages) == 0 {
		bad("messages must not be empty")
	}
	if req.StreamOptions != nil && !req.Stream {
		bad("stream_options is only allowed when stream is enabled")
	}
	pending := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			bad("messages[%d]: an assistant message with tool_calls must be followed by tool messages responding to each tool_call_id (%d missing)", i, len(pending))
			pending = map[string]bool{}
		}
		var text string
		isString := json.Unmarshal(m.Content, &text) == nil
		switch m.Role {
		case "system", "developer", "user":
			if !isString && !isArray(m.Content) {
				bad("messages[%d]: content must be a string or an array", i)
			}
		case "assistant":
			if !isString && !isNull(m.Content) && !isArray(m.Content) {
				bad("messages[%d]: assistant content must be a string, an array or null", i)
			}
			if isNull(m.Content) && len(m.ToolCalls) == 0 {
				bad("messages[%d]: assistant content is required unless tool_calls is set", i)
			}
			for j, c := range m.ToolCalls {
				var args string
				switch {
				case c.ID == "":
					bad("messages[%d].tool_calls[%d]: id is required", i, j)
				case c.Type != "function":
					bad("messages[%d].tool_calls[%d]: type must be function", i, j)
				case !toolNameRE.MatchString(c.Function.Name):
					bad("messages[%d].tool_calls[%d]: invalid function name %q", i, j, c.Function.Name)
				case json.Unmarshal(c.Function.Arguments, &args) != nil:
					bad("messages[%d].tool_calls[%d]: function.arguments must be a string", i, j)
				}
				pending[c.ID] = true
			}
		case "tool":
			if !isString {
				bad("messages[%d]: tool content must be a string", i)
			}
			if !pending[m.ToolCallID] {
				bad("messages[%d]: tool message answers %q, which is not a tool call of the preceding assistant message", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			rec.Results = append(rec.Results, Result{CallID: m.ToolCallID, Content: text})
		default:
			bad("messages[%d]: invalid role %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		bad("the last assistant message has %d tool call(s) without a tool message", len(pending))
	}
	for i, t := range req.Tools {
		if t.Type != "function" {
			bad("tools[%d]: type must be function", i)
		}
		if !toolNameRE.MatchString(t.Function.Name) {
			bad("tools[%d]: invalid function name %q (must match ^[a-zA-Z0-9_-]{1,64}$)", i, t.Function.Name)
		}
		if t.Function.Parameters != nil && !isObject(t.Function.Parameters) {
			bad("tools[%d]: parameters must be an object", i)
		}
	}
	return rec, false
}

func (openaiProto) fail(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = map[int]string{401: "invalid_request_error", 429: "rate_limit_exceeded"}[status]
	}
	if typ == "" {
		typ = "server_error"
		if status < 500 {
			typ = "invalid_request_error"
		}
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}

type oaCallOut struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (openaiProto) reply(w http.ResponseWriter, t Turn, idx int, rec Received) {
	id := "chatcmpl-scripted-" + strconv.Itoa(idx)
	w.Header().Set("x-request-id", "req_scripted_"+strconv.Itoa(idx))
	in, out := usage(t, rec)
	finish := t.StopReason
	if finish == "" {
		finish = "stop"
		if len(t.Calls) > 0 {
			finish = "tool_calls"
		}
	}
	calls := make([]oaCallOut, len(t.Calls))
	for i, c := range t.Calls {
		calls[i].ID = c.ID
		if c.ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d_%d", idx, i)
		}
		calls[i].Type = "function"
		calls[i].Function.Name, calls[i].Function.Arguments = c.Name, c.Args
	}
	u := map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if !rec.Stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if t.Text != "" || len(calls) == 0 {
			msg["content"] = t.Text
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": 1767225600, "model": rec.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   u,
		})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": rec.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range pieces(t.Text, 6) {
		chunk(map[string]any{"content": p}, nil)
	}
	for i, c := range calls {
		head := c
		head.Index, head.Function.Arguments = &i, ""
		chunk(map[string]any{"tool_calls": []any{head}}, nil)
		for _, p := range pieces(c.Function.Arguments, 5) {
			var d oaCallOut
			d.Index, d.Function.Arguments = &i, p
			chunk(map[string]any{"tool_calls": []any{d}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if rec.includeUsage {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": rec.Model,
			"choices": []any{}, "usage": u})
	}
	s.event("", "[DONE]")
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }
func isArray(raw json.RawMessage) bool {
	var a []json.RawMessage
	return json.Unmarshal(raw, &a) == nil
}
