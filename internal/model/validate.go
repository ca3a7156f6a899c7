package model

import (
	"bytes"
	"encoding/json"
)

// validate checks the rules both protocols enforce, so a broken conversation fails
// here with a clear error instead of as a provider 400 after a network round trip:
// known roles, the right fields per role, unique tools, and every tool call answered
// by the tool messages right after its assistant message, and nothing else answered.
func validate(req Request) error {
	if req.Model == "" {
		return invalidf("no model")
	}
	if len(req.Messages) == 0 {
		return invalidf("no messages")
	}
	if req.MaxOutputTokens < 0 {
		return invalidf("negative max output tokens")
	}
	seen := map[string]bool{}
	for i, t := range req.Tools {
		if t.Name == "" {
			return invalidf("tool %d has no name", i)
		}
		if seen[t.Name] {
			return invalidf("tool %q offered twice", t.Name)
		}
		seen[t.Name] = true
		if t.InputSchema != nil && !isObject(t.InputSchema) {
			return invalidf("tool %q: input schema is not a JSON object", t.Name)
		}
	}
	var open map[string]bool // calls of the last assistant message not yet answered
	for i, m := range req.Messages {
		if m.Role != RoleTool && len(open) > 0 {
			return invalidf("message %d: %d tool call(s) of the previous assistant message have no result", i, len(open))
		}
		switch m.Role {
		case RoleSystem, RoleUser:
			if m.Text == "" || len(m.ToolCalls) > 0 || len(m.ToolResults) > 0 {
				return invalidf("message %d: a %s message carries text and nothing else", i, m.Role)
			}
			open = nil
		case RoleAssistant:
			if len(m.ToolResults) > 0 || (m.Text == "" && len(m.ToolCalls) == 0) {
				return invalidf("message %d: an assistant message carries text or tool calls", i)
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return invalidf("message %d: tool call without id or name", i)
				}
				if open[c.ID] {
					return invalidf("message %d: tool call id %q used twice", i, c.ID)
				}
				if c.ArgsErr == nil && c.Args != nil && !isObject(c.Args) {
					return invalidf("message %d: tool call %q: args are not a JSON object", i, c.ID)
				}
				open[c.ID] = true
			}
		case RoleTool:
			if m.Text != "" || len(m.ToolCalls) > 0 || len(m.ToolResults) == 0 {
				return invalidf("message %d: a tool message carries tool results and nothing else", i)
			}
			for _, r := range m.ToolResults {
				if !open[r.CallID] {
					return invalidf("message %d: result for %q answers no open tool call", i, r.CallID)
				}
				delete(open, r.CallID)
			}
		default:
			return invalidf("message %d: unknown role %q", i, m.Role)
		}
	}
	if len(open) > 0 {
		return invalidf("last assistant message has %d tool call(s) without a result", len(open))
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return json.Valid(raw)
}

// needsNotice reports whether the request involves tools, so the adapters append
// ToolResultNotice to the system prompt.
func needsNotice(req Request) bool {
	if len(req.Tools) > 0 {
		return true
	}
	for _, m := range req.Messages {
		if len(m.ToolResults) > 0 {
			return true
		}
	}
	return false
}

func systemPrompt(req Request) string {
	if !needsNotice(req) {
		return req.System
	}
	if req.System == "" {
		return ToolResultNotice
	}
	return req.System + "\n\n" + ToolResultNotice
}
