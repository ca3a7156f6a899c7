package model

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	user := Message{Role: RoleUser, Text: "go"}
	call := func(id string) ToolCall { return ToolCall{ID: id, Name: "t", Args: json.RawMessage(`{}`)} }
	asst := func(ids ...string) Message {
		m := Message{Role: RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, call(id))
		}
		return m
	}
	res := func(ids ...string) Message {
		m := Message{Role: RoleTool}
		for _, id := range ids {
			m.ToolResults = append(m.ToolResults, ToolResult{CallID: id, Name: "t", Content: "x"})
		}
		return m
	}
	cases := []struct {
		name string
		req  Request
		ok   bool
	}{
		{"minimal", Request{Model: "m", Messages: []Message{user}}, true},
		{"calls answered across two tool messages", Request{Model: "m", Messages: []Message{user, asst("a", "b"), res("a"), res("b"), user}}, true},
		{"no model", Request{Messages: []Message{user}}, false},
		{"no messages", Request{Model: "m"}, false},
		{"unanswered call before the next user message", Request{Model: "m", Messages: []Message{user, asst("a", "b"), res("a"), user}}, false},
		{"unanswered call at the end", Request{Model: "m", Messages: []Message{user, asst("a")}}, false},
		{"result for an unknown call", Request{Model: "m", Messages: []Message{user, asst("a"), res("a", "z")}}, false},
		{"result answering an older assistant message", Request{Model: "m", Messages: []Message{user, asst("a"), res("a"), asst("b"), res("a", "b")}}, false},
		{"duplicate call id", Request{Model: "m", Messages: []Message{user, asst("a", "a"), res("a")}}, false},
		{"empty user text", Request{Model: "m", Messages: []Message{{Role: RoleUser}}}, false},
		{"empty assistant", Request{Model: "m", Messages: []Message{user, {Role: RoleAssistant}}}, false},
		{"tool message with text", Request{Model: "m", Messages: []Message{user, asst("a"), {Role: RoleTool, Text: "x", ToolResults: res("a").ToolResults}}}, false},
		{"unknown role", Request{Model: "m", Messages: []Message{{Role: "developer", Text: "x"}}}, false},
		{"duplicate tool", Request{Model: "m", Messages: []Message{user}, Tools: []ToolDef{{Name: "a"}, {Name: "a"}}}, false},
		{"schema not an object", Request{Model: "m", Messages: []Message{user}, Tools: []ToolDef{{Name: "a", InputSchema: json.RawMessage(`[]`)}}}, false},
		{"args not an object", Request{Model: "m", Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "t", Args: json.RawMessage(`[1]`)}}}, res("a")}}, false},
		{"malformed args with their error are fine", Request{Model: "m", Messages: []Message{user,
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "t", ArgsErr: &ArgsError{Raw: "{"}}}}, res("a")}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.req)
			if tc.ok != (err == nil) {
				t.Fatalf("validate = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadRequest) {
				t.Errorf("%v does not match ErrBadRequest", err)
			}
		})
	}
}
