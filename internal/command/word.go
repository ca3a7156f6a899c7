package command

import (
	"fmt"
	"path"
	"strings"
)

// Kind says how much is known of an argument before the line runs.
type Kind uint8

const (
	// Literal: the text is exactly the argument.
	Literal Kind = iota
	// Unknown: one argument of unknown value.
	Unknown
	// Splat: zero or more arguments of unknown value.
	Splat
)

func (k Kind) String() string {
	return [...]string{"literal", "unknown", "splat"}[k]
}

// MarshalText names the kind in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind MarshalText wrote.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, name := range [...]string{"literal", "unknown", "splat"} {
		if string(b) == name {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown word kind %q (want literal, unknown or splat)", b)
}

// Word is one argument as far as it is known. Text is the argument for a Literal
// and the source text for the others (for showing a person).
type Word struct {
	Text string `json:"text"`
	Kind Kind   `json:"kind"`
}

func lit(s string) Word { return Word{Text: s} }

// Simple is one program run by a line.
type Simple struct {
	Argv []Word `json:"argv"`
	// Via lists the shells and wrappers the program is run through, outermost
	// first: "sh -c", "env", "xargs", "find -exec", "sudo".
	Via []string `json:"via,omitempty"`
	// Opaque, if set, says why the program cannot be known; Argv is then what is.
	Opaque string `json:"opaque,omitempty"`
	// Redirects are the files the shell opens for the program.
	Redirects []Redirect `json:"redirects,omitempty"`
}

// Redirect is a file a shell redirection opens.
type Redirect struct {
	Op   string `json:"op"` // ">", ">>", "<", "&>", …
	Path Word   `json:"path"`
}

// Writes reports whether the redirection can create or change its file.
func (r Redirect) Writes() bool {
	return r.Op != "<" && r.Op != "<<<" && !strings.HasPrefix(r.Op, "<<")
}

// Name returns the program's base name ("" if it is not literal).
func (s Simple) Name() string {
	if len(s.Argv) == 0 || s.Argv[0].Kind != Literal {
		return ""
	}
	return path.Base(s.Argv[0].Text)
}

// String shows the argv as a person would type it, unknown parts as written.
func (s Simple) String() string {
	var b strings.Builder
	for i, w := range s.Argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.Kind == Literal && w.Text != "" && !strings.ContainsAny(w.Text, " \t\n'\"\\$`;&|<>(){}*?[]#~") {
			b.WriteString(w.Text)
			continue
		}
		if w.Kind != Literal {
			b.WriteString(w.Text)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(w.Text, "'", `'\''`) + "'")
	}
	return b.String()
}

// Line is what a command line runs.
type Line struct {
	Simple []Simple `json:"simple"`
}

// Opaque returns the first opaque program's reason, or "".
func (l Line) Opaque() string {
	for _, s := range l.Simple {
		if s.Opaque != "" {
			return s.Opaque
		}
	}
	return ""
}

// Literals returns every literal argument of every program (paths among them), in
// order, for classifying what a line touches.
func (l Line) Literals() []string {
	var out []string
	for _, s := range l.Simple {
		for _, w := range s.Argv {
			if w.Kind == Literal {
				out = append(out, w.Text)
			}
		}
		for _, r := range s.Redirects {
			if r.Path.Kind == Literal {
				out = append(out, r.Path.Text)
			}
		}
	}
	return out
}
