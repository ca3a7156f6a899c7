package model

import (
	"fmt"

	"github.com/agentbox/agentbox/internal/provenance"
)

// ToolResultNotice is appended to the system prompt by both adapters whenever a
// request offers tools or carries tool results, so the model is told how to read
// the blocks RenderToolResult makes (provenance.Notice).
const ToolResultNotice = provenance.Notice

// RenderToolResult turns a tool result into the text the model sees, with
// provenance.Render: the one place that renders results for models.
func RenderToolResult(r ToolResult) string {
	return provenance.Render(provenance.Result{Tool: r.Name, Call: r.CallID, Source: provenance.Source{ID: r.Provenance.Source},
		Content: r.Content, IsError: r.IsError, Truncated: r.Provenance.Truncated})
}

// ArgsErrorResult is the observation to send back for a call whose arguments were
// malformed (call.ArgsErr set): an error result that quotes what the model sent and
// asks for a JSON object. It returns a zero ToolResult for a call without ArgsErr.
func ArgsErrorResult(call ToolCall) ToolResult {
	if call.ArgsErr == nil {
		return ToolResult{}
	}
	return ToolResult{
		CallID: call.ID,
		Name:   call.Name,
		Content: fmt.Sprintf("error: %s\narguments received: %s\n"+
			"The tool was not run. Call it again with a JSON object that matches its input schema.",
			call.ArgsErr.Error(), call.ArgsErr.Raw),
		IsError:    true,
		Provenance: Provenance{Source: "model tool-call arguments"},
	}
}
