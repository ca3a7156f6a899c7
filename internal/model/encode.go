package model

import (
	"bytes"
	"encoding/json"
)

// marshal encodes a wire request without HTML escaping, so the tool_result tags and
// code reach the provider as written rather than as \u003c sequences.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
