package command

import (
	"bytes"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxShellInput bounds the shell text parsed; a longer line is opaque.
const maxShellInput = 256 << 10

// ParseShell returns what a shell line runs, as sh -c would run it.
func ParseShell(src string) Line { return Line{Simple: shell(src, nil, 0)} }

func shell(src string, via []string, depth int) []Simple {
	if depth > maxDepth {
		return opaque([]Word{{Text: src, Kind: Unknown}}, via, "shells and wrappers nested too deeply")
	}
	if len(src) > maxShellInput {
		return opaque([]Word{{Text: src[:64] + "…", Kind: Unknown}}, via, "the shell line is too long to parse")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return opaque([]Word{{Text: src, Kind: Unknown}}, via, "the shell line does not parse: "+err.Error())
	}
	w := &walker{via: via, depth: depth}
	w.stmts(f.Stmts)
	return w.out
}

// walker collects the programs of a parsed shell line.
type walker struct {
	via   []string
	depth int
	out   []Simple
}

func (w *walker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

func (w *walker) stmt(s *syntax.Stmt) {
	first := len(w.out)
	var redirs []Redirect
	for _, r := range s.Redirs {
		if r.Word != nil {
			redirs = append(redirs, Redirect{Op: r.Op.String(), Path: w.word(r.Word)})
		}
		if r.Hdoc != nil {
			w.word(r.Hdoc) // its substitutions run
		}
	}
	if s.Cmd != nil {
		w.command(s.Cmd)
	}
	for i := first; i < len(w.out); i++ {
		w.out[i].Redirects = append(w.out[i].Redirects, redirs...)
	}
	if len(w.out) == first && len(redirs) > 0 {
		// A bare redirection (> file) still opens its file.
		w.out = append(w.out, Simple{Via: w.via, Redirects: redirs})
	}
}

func (w *walker) opaque(n syntax.Node, why string) {
	w.out = append(w.out, Simple{Argv: []Word{{Text: source(n), Kind: Unknown}}, Via: w.via, Opaque: why})
}

func (w *walker) command(c syntax.Command) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		for _, a := range c.Assigns {
			w.assign(a)
		}
		if len(c.Args) == 0 {
			return
		}
		argv := make([]Word, 0, len(c.Args))
		for _, a := range c.Args {
			argv = append(argv, w.word(a))
		}
		for _, a := range c.Assigns {
			if a.Name != nil {
				if why := dangerousVar(a.Name.Value); why != "" {
					w.out = append(w.out, opaque(argv, w.via, why)...)
					return
				}
			}
		}
		w.out = append(w.out, unwrap(argv, w.via, w.depth)...)
	case *syntax.BinaryCmd:
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			w.stmts(c.Cond)
			w.stmts(c.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		if it, ok := c.Loop.(*syntax.WordIter); ok {
			for _, x := range it.Items {
				w.word(x)
			}
		} else {
			w.substitutions(c.Loop)
		}
		w.stmts(c.Do)
	case *syntax.CaseClause:
		w.word(c.Word)
		for _, it := range c.Items {
			w.stmts(it.Stmts)
		}
	case *syntax.TimeClause:
		if c.Stmt != nil {
			w.stmt(c.Stmt)
		}
	case *syntax.CoprocClause:
		w.stmt(c.Stmt)
	case *syntax.TestClause:
		w.substitutions(c)
	case *syntax.DeclClause:
		for _, a := range c.Args {
			if a.Name != nil {
				if why := dangerousVar(a.Name.Value); why != "" {
					w.opaque(c, why)
				}
			} else if a.Naked && a.Value != nil && w.word(a.Value).Kind != Literal {
				w.opaque(c, "declares variables named only at run time")
			}
			w.assign(a)
		}
	case *syntax.FuncDecl:
		w.opaque(c, "defines a function, which can stand for any program name")
		w.stmt(c.Body)
	case *syntax.ArithmCmd, *syntax.LetClause:
		// Bash evaluates array subscripts of variables in arithmetic, which can
		// run a command substitution held in a variable.
		w.opaque(c, "arithmetic evaluation can run commands held in variables")
		w.substitutions(c)
	default:
		w.opaque(c, "a shell construct this package does not parse")
	}
}

func (w *walker) assign(a *syntax.Assign) {
	if a.Value != nil {
		w.word(a.Value)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e.Value != nil {
				w.word(e.Value)
			}
		}
	}
}

// substitutions collects the commands run by substitutions anywhere below n.
func (w *walker) substitutions(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			w.sub(n.Stmts, "$(…)")
			return false
		case *syntax.ProcSubst:
			w.sub(n.Stmts, "<(…)")
			return false
		}
		return true
	})
}

func (w *walker) sub(ss []*syntax.Stmt, how string) {
	inner := &walker{via: with(w.via, how), depth: w.depth + 1}
	if inner.depth > maxDepth {
		w.out = append(w.out, Simple{Argv: []Word{{Text: how, Kind: Unknown}}, Via: w.via, Opaque: "substitutions nested too deeply"})
		return
	}
	inner.stmts(ss)
	w.out = append(w.out, inner.out...)
}

// word converts a shell word, collecting the commands its substitutions run.
func (w *walker) word(x *syntax.Word) Word {
	var b strings.Builder
	kind := Literal
	worse := func(k Kind) {
		if k > kind {
			kind = k
		}
	}
	for i, p := range x.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			s, glob := unescape(p.Value, false)
			if glob {
				worse(Splat)
			}
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				worse(Unknown) // tilde expansion: the home directory
			}
			b.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				worse(Unknown) // $'…' decodes escapes: \x67it is git
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					s, _ := unescape(l.Value, true)
					b.WriteString(s)
					continue
				}
				worse(Unknown)
				w.substitutions(q)
			}
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp:
			worse(Splat) // unquoted: split into any number of words
			w.substitutions(p)
		case *syntax.ProcSubst:
			worse(Unknown) // a /dev/fd path
			w.substitutions(p)
		default: // ExtGlob, BraceExp
			worse(Splat)
		}
	}
	if kind != Literal {
		return Word{Text: source(x), Kind: kind}
	}
	return Word{Text: b.String()}
}

// unescape removes the backslashes of a literal (inside double quotes, only those
// before $ ` " \ and newline) and reports an unescaped glob or brace expansion.
func unescape(s string, quoted bool) (string, bool) {
	var b strings.Builder
	glob := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			n := s[i+1]
			if !quoted || strings.IndexByte("$`\"\\\n", n) >= 0 {
				i++
				if n != '\n' {
					b.WriteByte(n)
				}
				continue
			}
		}
		if !quoted && (c == '*' || c == '?' || c == '[' || c == '{' && strings.ContainsAny(s[i:], ",.")) {
			glob = true
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

func source(n syntax.Node) string {
	var b bytes.Buffer
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		return "?"
	}
	return b.String()
}

// splitWords splits a string into words the way a shell would, if every word is
// literal.
func splitWords(s string) ([]Word, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
	if err != nil || len(f.Stmts) != 1 || len(f.Stmts[0].Redirs) > 0 {
		return nil, false
	}
	c, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(c.Assigns) > 0 {
		return nil, false
	}
	w := &walker{}
	var out []Word
	for _, a := range c.Args {
		x := w.word(a)
		if x.Kind != Literal || len(w.out) > 0 {
			return nil, false
		}
		out = append(out, x)
	}
	return out, true
}
