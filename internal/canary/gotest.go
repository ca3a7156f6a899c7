package canary

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RewriteGo rewrites one hidden _test.go file into the two copies the grader
// runs, each in an environment of its own: every top-level test function gets a
// random name in each copy, and a test that has a safe check (see the package
// documentation) is its canary in one copy, chosen at random, and itself in the
// other, so that no run holds a test and its canary together. A test without one
// is itself in both, under two names. Comments are dropped, so that a real test and its canary
// differ only in their names and the inverted check. rng decides names,
// perturbations and copies, so a grade's seed reproduces them. A file that does
// not parse is an error: the grader then runs it unchanged in both copies.
func RewriteGo(name string, src []byte, rng *rand.Rand) ([2][]byte, Plan, error) {
	var copies [2][]byte
	plan := Plan{Real: map[string]string{}, Canary: map[string]string{}}
	// A comment-free canonical text: every copy below is parsed from it and printed
	// the same way.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return copies, plan, fmt.Errorf("canary: %w", err)
	}
	var canon bytes.Buffer
	if err := printer.Fprint(&canon, fset, f); err != nil {
		return copies, plan, fmt.Errorf("canary: %w", err)
	}
	text := canon.Bytes()
	fset = token.NewFileSet()
	if f, err = parser.ParseFile(fset, name, text, parser.SkipObjectResolution); err != nil {
		return copies, plan, fmt.Errorf("canary: %w", err)
	}
	testing := importName(f, "testing")
	type edit struct {
		at, end int
		text    string
	}
	var edits [2][]edit
	used := map[string]bool{}
	for _, d := range f.Decls {
		used[declName(d)] = true
	}
	fresh := func() string {
		for {
			n := randomTestName(rng)
			if !used[n] {
				used[n] = true
				return n
			}
		}
	}
	for i, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || testParam(fn, testing) == "" {
			continue
		}
		orig := fn.Name.Name
		start, end := fset.Position(fn.Pos()).Offset, fset.Position(fn.End()).Offset
		nameAt := fset.Position(fn.Name.Pos()).Offset
		real := fresh()
		plan.Real[real] = orig
		renamed := string(text[start:nameAt]) + real + string(text[nameAt+len(orig):end])
		in := rng.IntN(2) // the copy that holds the test as it is
		edits[in] = append(edits[in], edit{start, end, renamed})
		canary, ok := canaryOf(name, text, i, rng)
		if !ok {
			// In both copies, so that each still uses whatever the test imports.
			plan.Uncovered = append(plan.Uncovered, orig)
			again := fresh()
			plan.Real[again] = orig
			edits[1-in] = append(edits[1-in], edit{start, end, string(text[start:nameAt]) + again + string(text[nameAt+len(orig):end])})
			continue
		}
		cname := fresh()
		plan.Canary[cname] = orig
		edits[1-in] = append(edits[1-in], edit{start, end, strings.Replace(canary, "func "+orig+"(", "func "+cname+"(", 1)})
	}
	for c := range 2 {
		var out bytes.Buffer
		last := 0
		for _, e := range edits[c] {
			out.Write(text[last:e.at])
			out.WriteString(e.text)
			last = e.end
		}
		out.Write(text[last:])
		formatted, err := format.Source(out.Bytes())
		if err != nil {
			return copies, plan, fmt.Errorf("canary: rewritten %s does not parse: %w", name, err)
		}
		copies[c] = formatted
	}
	return copies, plan, nil
}

// canaryOf parses text again and returns declaration i, a test, with its last safe
// check inverted, printed; false when it has none.
func canaryOf(name string, text []byte, i int, rng *rand.Rand) (string, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, text, parser.SkipObjectResolution)
	if err != nil {
		return "", false
	}
	fn := f.Decls[i].(*ast.FuncDecl)
	t := testParam(fn, importName(f, "testing"))
	check := lastCheck(fn.Body, t)
	if check == nil {
		return "", false
	}
	check.Cond = invert(check.Cond, rng)
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, fn); err != nil {
		return "", false
	}
	return b.String(), true
}

// lastCheck returns the last top-level if statement of body that is reached
// whenever the test passes (no return outside a function literal before it) and
// whose own top-level statements call t.Error, t.Errorf, t.Fatal or t.Fatalf
// before any return; nil when there is none.
func lastCheck(body *ast.BlockStmt, t string) *ast.IfStmt {
	var found *ast.IfStmt
	for _, st := range body.List {
		if is, ok := st.(*ast.IfStmt); ok && is.Else == nil && reports(is.Body, t) {
			found = is
		}
		if returns(st) {
			break
		}
	}
	return found
}

func reports(body *ast.BlockStmt, t string) bool {
	for _, st := range body.List {
		if returns(st) {
			return false
		}
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == t && slices.Contains([]string{"Error", "Errorf", "Fatal", "Fatalf"}, sel.Sel.Name) {
			return true
		}
	}
	return false
}

// returns reports whether n holds a return statement outside function literals.
func returns(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(x ast.Node) bool {
		switch x.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		}
		return !found
	})
	return found
}

// invert returns a condition true exactly when cond is false (or, for x != L with
// a literal L, true whenever x == L held).
func invert(cond ast.Expr, rng *rand.Rand) ast.Expr {
	switch c := cond.(type) {
	case *ast.ParenExpr:
		return &ast.ParenExpr{X: invert(c.X, rng)}
	case *ast.UnaryExpr:
		if c.Op == token.NOT {
			return c.X
		}
	case *ast.BinaryExpr:
		switch c.Op {
		case token.NEQ:
			for _, side := range []*ast.Expr{&c.Y, &c.X} {
				if lit, ok := (*side).(*ast.BasicLit); ok {
					if v, ok := perturb(lit, rng); ok {
						*side = v
						return c
					}
				}
			}
			c.Op = token.EQL
			return c
		case token.EQL:
			c.Op = token.NEQ
			return c
		case token.LOR, token.LAND:
			// A passing test found every disjunct of a || false: one x != L among
			// them with L moved makes the whole true, and the canary has the real
			// check's shape, which a forger holding one copy cannot tell.
			if c.Op == token.LOR && perturbDisjunct(c, rng) {
				return c
			}
			// Else De Morgan, so that the canary reads like a check someone wrote: each
			// side's inversion is true whenever that side was false.
			c.Op = map[token.Token]token.Token{token.LOR: token.LAND, token.LAND: token.LOR}[c.Op]
			c.X, c.Y = group(c.Op, invert(c.X, rng)), group(c.Op, invert(c.Y, rng))
			return c
		}
	}
	if _, ok := cond.(*ast.BinaryExpr); ok {
		cond = &ast.ParenExpr{X: cond}
	}
	return &ast.UnaryExpr{Op: token.NOT, X: cond}
}

// perturbDisjunct moves the literal of the last x != L (or L != x) among the
// operands of the || chain c (through parentheses), and reports whether it found
// one.
func perturbDisjunct(c *ast.BinaryExpr, rng *rand.Rand) bool {
	for _, side := range []*ast.Expr{&c.Y, &c.X} {
		e := *side
		for {
			p, ok := e.(*ast.ParenExpr)
			if !ok {
				break
			}
			e = p.X
		}
		b, ok := e.(*ast.BinaryExpr)
		if !ok {
			continue
		}
		switch b.Op {
		case token.LOR:
			if perturbDisjunct(b, rng) {
				return true
			}
		case token.NEQ:
			for _, operand := range []*ast.Expr{&b.Y, &b.X} {
				if lit, ok := (*operand).(*ast.BasicLit); ok {
					if v, ok := perturb(lit, rng); ok {
						*operand = v
						return true
					}
				}
			}
		}
	}
	return false
}

// group parenthesizes e, an operand of op, when it is a || under a && (what
// inverting a && of ||s makes); && and || are associative, so no other operand
// needs them, and a canary has no more parentheses than a check someone wrote.
func group(op token.Token, e ast.Expr) ast.Expr {
	if b, ok := e.(*ast.BinaryExpr); ok && op == token.LAND && b.Op == token.LOR {
		return &ast.ParenExpr{X: e}
	}
	return e
}

// perturb returns a literal of lit's kind with another value that fits wherever
// lit does: a positive integer or character goes down by one, zero becomes 1 (a
// literal is never negative: -5 is a unary minus); a float is halved (zero becomes
// 1); a string gains a character.
func perturb(lit *ast.BasicLit, rng *rand.Rand) (*ast.BasicLit, bool) {
	switch lit.Kind {
	case token.INT:
		v, ok := new(big.Int).SetString(strings.ReplaceAll(lit.Value, "_", ""), 0)
		if !ok {
			return nil, false
		}
		if v.Sign() > 0 {
			v.Sub(v, big.NewInt(1))
		} else {
			v.SetInt64(1)
		}
		return &ast.BasicLit{Kind: token.INT, Value: v.String()}, true
	case token.CHAR:
		r, _, _, err := strconv.UnquoteChar(lit.Value[1:len(lit.Value)-1], '\'')
		if err != nil {
			return nil, false
		}
		if r > 0 {
			r--
		} else {
			r++
		}
		return &ast.BasicLit{Kind: token.CHAR, Value: strconv.QuoteRune(r)}, true
	case token.FLOAT:
		v, err := strconv.ParseFloat(strings.ReplaceAll(lit.Value, "_", ""), 64)
		if err != nil {
			return nil, false
		}
		if v == 0 {
			v = 1
		} else {
			v /= 2
		}
		return &ast.BasicLit{Kind: token.FLOAT, Value: strconv.FormatFloat(v, 'g', -1, 64) + dot(v)}, true
	case token.STRING:
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return nil, false
		}
		return &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(s + string(rune('a'+rng.IntN(26))))}, true
	}
	return nil, false
}

// dot keeps a float literal a float ("2" would be an integer constant).
func dot(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if strings.ContainsAny(s, ".eE") {
		return ""
	}
	return ".0"
}

// testParam returns the name of fn's *testing.T parameter when fn is a test go
// test runs (TestXxx, not TestMain, no receiver or type parameters); else "".
func testParam(fn *ast.FuncDecl, testing string) string {
	name := fn.Name.Name
	if fn.Recv != nil || fn.Type.TypeParams != nil || fn.Body == nil || testing == "" || name == "TestMain" || !strings.HasPrefix(name, "Test") {
		return ""
	}
	if r, _ := utf8.DecodeRuneInString(name[4:]); len(name) > 4 && unicode.IsLower(r) {
		return ""
	}
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) != 1 || fn.Type.Results != nil {
		return ""
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return ""
	}
	if id, ok := sel.X.(*ast.Ident); !ok || id.Name != testing {
		return ""
	}
	if n := ps[0].Names[0].Name; n != "_" {
		return n
	}
	return ""
}

// importName returns the name path is imported under in f, or "".
func importName(f *ast.File, path string) string {
	for _, is := range f.Imports {
		if p, _ := strconv.Unquote(is.Path.Value); p == path {
			if is.Name != nil {
				return is.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

func declName(d ast.Decl) string {
	if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
		return fn.Name.Name
	}
	return ""
}

// randomTestName is Test, a capital letter and ten letters or digits: the shape of
// no name in particular.
func randomTestName(rng *rand.Rand) string {
	const upper, rest = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte("Test")
	b = append(b, upper[rng.IntN(len(upper))])
	for range 10 {
		b = append(b, rest[rng.IntN(len(rest))])
	}
	return string(b)
}
