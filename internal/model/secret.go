package model

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

const redacted = "[redacted]"

// Secret holds an API key. It prints, formats, logs and marshals as [redacted]
// (String, GoString, Format, MarshalJSON, MarshalText, LogValue), and keeps the key
// behind a pointer so that even printing a struct that holds a Secret in an
// unexported field shows an address, not the key. Only Reveal returns the key; the
// adapters call it when they set the request header. The zero Secret is "no key".
type Secret struct {
	v *string
}

// NewSecret wraps a key. An empty key gives the zero Secret.
func NewSecret(key string) Secret {
	if key == "" {
		return Secret{}
	}
	return Secret{v: &key}
}

// Reveal returns the key, or "" for the zero Secret.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsZero reports whether no key is set.
func (s Secret) IsZero() bool { return s.v == nil || *s.v == "" }

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) Format(f fmt.State, _ rune)   { io.WriteString(f, redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s Secret) scrub(text string) string {
	if s.IsZero() {
		return text
	}
	return strings.ReplaceAll(text, *s.v, redacted)
}
