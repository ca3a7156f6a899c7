package tool

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaFor infers a JSON Schema from a Go type (an arguments or output struct):
// exported fields by their json names, required unless omitempty, no additional
// properties, descriptions from `jsonschema:"…"` tags.
func SchemaFor[T any]() json.RawMessage {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("tool: schema for %T: %v", *new(T), err)) // a programming error in a built-in tool
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool: marshal schema: %v", err))
	}
	return b
}

// compile parses and resolves a schema, which must describe an object.
func compile(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("schema type is %q, want \"object\"", s.Type)
	}
	return s.Resolve(nil)
}

// checkArgs validates call arguments against a resolved schema. Arguments must be a
// JSON object; empty arguments mean {}.
func checkArgs(rs *jsonschema.Resolved, args json.RawMessage) (json.RawMessage, *Error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, Errorf(EINVAL, false, ActFixArgs, "arguments are not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, Errorf(EINVAL, false, ActFixArgs, "arguments must be a JSON object")
	}
	if err := rs.Validate(v); err != nil {
		msg := err.Error()
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "…"
		}
		return nil, Errorf(EINVAL, false, ActFixArgs, "arguments do not match the input schema: %s", msg)
	}
	return args, nil
}

// decode unmarshals validated arguments into a handler's struct, refusing unknown
// fields (the schemas already do; this guards a schema written by hand).
func decode(args json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return Errorf(EINVAL, false, ActFixArgs, "arguments: %v", err)
	}
	return nil
}
