package command

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Mode is the question Match answers.
type Mode uint8

const (
	// Must: does every run of the command match? For allow rules and grants.
	Must Mode = iota
	// May: could some run match? For ask and deny rules.
	May
)

// Pattern is an argv pattern: a program glob and argument globs, "*" for any one
// argument, "**" for any number. "**" alone matches every command line, opaque
// ones included.
type Pattern struct {
	words []string
}

// ErrPattern is matched by every ParsePattern error.
var ErrPattern = errors.New("bad command pattern")

// ParsePattern parses a pattern written as words separated by spaces, with single
// or double quotes around a word holding spaces: `git commit -m *`, `go test **`.
func ParsePattern(s string) (Pattern, error) {
	words, err := splitPattern(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("%w %q: %v", ErrPattern, s, err)
	}
	switch {
	case len(words) == 0:
		return Pattern{}, fmt.Errorf("%w %q: empty; write a program name, or ** for any command", ErrPattern, s)
	case words[0] == "**" && len(words) > 1:
		return Pattern{}, fmt.Errorf("%w %q: ** as the program matches every command line; write it alone", ErrPattern, s)
	case words[0] == "":
		return Pattern{}, fmt.Errorf("%w %q: the program name is empty", ErrPattern, s)
	}
	return Pattern{words: words}, nil
}

// MustParsePattern is ParsePattern for patterns known to be valid.
func MustParsePattern(s string) Pattern {
	p, err := ParsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Any reports whether the pattern is "**", every command line.
func (p Pattern) Any() bool { return len(p.words) == 1 && p.words[0] == "**" }

func (p Pattern) String() string {
	var b strings.Builder
	for i, w := range p.words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w == "" || strings.ContainsAny(w, " \t\n\"'\\") {
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'")
			continue
		}
		b.WriteString(w)
	}
	return b.String()
}

// MarshalText writes the pattern as it is parsed.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a pattern.
func (p *Pattern) UnmarshalText(b []byte) error {
	v, err := ParsePattern(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Match reports whether the program s matches the pattern under mode m.
func (p Pattern) Match(s Simple, m Mode) bool {
	if len(p.words) == 0 {
		return false
	}
	if p.Any() {
		return m == Must || s.Opaque == "" && len(s.Argv) > 0
	}
	if s.Opaque != "" || len(s.Argv) == 0 || s.Argv[0].Kind != Literal {
		return false
	}
	prog, name := p.words[0], s.Argv[0].Text
	if !strings.Contains(prog, "/") {
		name = path.Base(name)
	}
	if !glob(prog, name) {
		return false
	}
	return matchArgs(p.words[1:], s.Argv[1:], m)
}

// MatchLine reports whether every program of the line matches (Must) or some
// program may match (May).
func (p Pattern) MatchLine(l Line, m Mode) bool {
	if len(l.Simple) == 0 {
		return m == Must && p.Any()
	}
	for _, s := range l.Simple {
		ok := p.Match(s, m)
		if m == May && ok {
			return true
		}
		if m == Must && !ok {
			return false
		}
	}
	return m == Must
}

func matchArgs(toks []string, words []Word, m Mode) bool {
	n, k := len(words), len(toks)
	memo := make([]int8, (n+1)*(k+1)) // 0 unknown, 1 true, 2 false
	var f func(i, j int) bool
	f = func(i, j int) bool {
		slot := &memo[i*(k+1)+j]
		if *slot != 0 {
			return *slot == 1
		}
		r := false
		switch {
		case j == k:
			r = i == n || m == May && allSplat(words[i:])
		case toks[j] == "**":
			r = f(i, j+1) || i < n && f(i+1, j)
		case i == n:
			r = false
		case words[i].Kind == Splat:
			r = m == May && (f(i+1, j) || f(i, j+1) || f(i+1, j+1))
		case words[i].Kind == Unknown:
			r = (m == May || toks[j] == "*") && f(i+1, j+1)
		default:
			r = glob(toks[j], words[i].Text) && f(i+1, j+1)
		}
		*slot = 2
		if r {
			*slot = 1
		}
		return r
	}
	return f(0, 0)
}

func allSplat(ws []Word) bool {
	for _, w := range ws {
		if w.Kind != Splat {
			return false
		}
	}
	return true
}

// glob matches s against a pattern of '*' (any run, '/' included) and '?' (one
// byte); every other byte stands for itself.
func glob(p, s string) bool {
	px, sx := 0, 0
	star, back := -1, 0
	for sx < len(s) {
		switch {
		case px < len(p) && p[px] == '*':
			star, back = px, sx
			px++
		case px < len(p) && (p[px] == '?' || p[px] == s[sx]):
			px++
			sx++
		case star >= 0:
			back++
			px, sx = star+1, back
		default:
			return false
		}
	}
	for px < len(p) && p[px] == '*' {
		px++
	}
	return px == len(p)
}

// splitPattern splits on blanks, honouring single and double quotes and
// backslashes.
func splitPattern(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				continue
			}
			b.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if in {
		out = append(out, b.String())
	}
	return out, nil
}
