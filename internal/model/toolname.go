package model

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"
)

// Both protocols accept tool names matching ^[a-zA-Z0-9_-]{1,64}$ only; agentbox
// names tools like "fs.read". toolNames maps each name to a wire name and back.
var wireNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

type toolNames struct {
	toWire   map[string]string
	fromWire map[string]string
}

// newToolNames maps the names of the offered tools (and of the calls in the history,
// which may name tools no longer offered). A valid name is kept; another has each
// invalid byte replaced by '_' and, if that collides or is too long, a hash suffix.
func newToolNames(tools []ToolDef, msgs []Message) toolNames {
	n := toolNames{toWire: map[string]string{}, fromWire: map[string]string{}}
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
	}
	// Valid names first, so they keep their spelling and sanitized ones yield.
	for _, name := range names {
		if wireNameRE().MatchString(name) {
			n.add(name, name)
		}
	}
	for _, name := range names {
		if _, done := n.toWire[name]; done {
			continue
		}
		w := sanitizeName(name)
		if _, taken := n.fromWire[w]; taken || len(w) > 64 || w == "" {
			sum := sha256.Sum256([]byte(name))
			w = truncate(w, 64-9) + "_" + hex.EncodeToString(sum[:4])
		}
		n.add(name, w)
	}
	return n
}

func (n toolNames) add(name, wire string) {
	if _, ok := n.toWire[name]; ok {
		return
	}
	n.toWire[name] = wire
	n.fromWire[wire] = name
}

func (n toolNames) wire(name string) string {
	if w, ok := n.toWire[name]; ok {
		return w
	}
	return name
}

// local maps a name the model used back to the tool's own name. A name the request
// never offered (a hallucinated tool) comes back unchanged for the loop to refuse.
func (n toolNames) local(wire string) string {
	if l, ok := n.fromWire[wire]; ok {
		return l
	}
	return wire
}

func sanitizeName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
