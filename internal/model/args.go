package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// maxRawArgs caps ArgsError.Raw so a runaway argument string does not flood the
// observation sent back to the model.
const maxRawArgs = 4096

// parseArgs turns tool-call arguments as a model sent them into a compact JSON
// object. Empty arguments mean {} (servers send "" for tools without parameters).
// Arguments that are a JSON string holding an object are unwrapped once: some
// OpenAI-compatible servers encode them twice.
func parseArgs(raw []byte) (json.RawMessage, *ArgsError) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return json.RawMessage("{}"), nil
	}
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		ae := &ArgsError{Raw: cut(string(raw)), Offset: 0, Reason: err.Error()}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			ae.Offset = se.Offset
		}
		return nil, ae
	}
	if inner, ok := v.(string); ok {
		if args, aerr := parseArgs([]byte(inner)); aerr == nil {
			return args, nil
		}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &ArgsError{Raw: cut(string(raw)), Offset: -1, Reason: "got " + jsonKind(v)}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, s); err != nil { // cannot fail after Unmarshal
		return nil, &ArgsError{Raw: cut(string(raw)), Offset: -1, Reason: err.Error()}
	}
	return b.Bytes(), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func cut(s string) string {
	if len(s) <= maxRawArgs {
		return s
	}
	i := maxRawArgs
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…[cut]"
}

// wireArgs is what the adapters send back for a call in the history: its arguments,
// or {} when they were malformed (several servers re-parse history arguments and
// would reject the whole request; the error result already quotes them).
func wireArgs(c ToolCall) json.RawMessage {
	if c.ArgsErr != nil || len(c.Args) == 0 {
		return json.RawMessage("{}")
	}
	return c.Args
}
