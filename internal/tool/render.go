package tool

import (
	"encoding/json"
	"strings"
)

// Render turns an envelope into the text a model reads: one line of JSON (ok,
// data, error, refs, truncated) followed, when the tool produced bulk text, by a
// blank line and the text itself, unescaped, so code reads as code. The caller
// wraps it as untrusted data (model.RenderToolResult); Render adds no framing of
// its own. observed_at and cost are left out: they are for the trace.
func Render(e Envelope) string {
	head := struct {
		OK        bool            `json:"ok"`
		Data      json.RawMessage `json:"data,omitempty"`
		Error     *Error          `json:"error,omitempty"`
		Refs      []Ref           `json:"refs,omitempty"`
		Truncated bool            `json:"truncated,omitempty"`
	}{e.OK, e.Data, e.Error, e.Refs, e.Truncated}
	if string(head.Data) == "null" {
		head.Data = nil
	}
	b, _ := json.Marshal(head)
	if e.Text == "" {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 2 + len(e.Text))
	sb.Write(b)
	sb.WriteString("\n\n")
	sb.WriteString(e.Text)
	return sb.String()
}
