package canary

import (
	"go/parser"
	"go/token"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func rng() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

// rewrite is RewriteGo with both copies joined, and a check that no copy holds
// a test and its canary together (they share the original's body, so a copy
// holding both would hold two functions of that body).
func rewrite(t *testing.T, src string, rng *rand.Rand) ([]byte, Plan, error) {
	t.Helper()
	copies, p, err := RewriteGo("x_test.go", []byte(src), rng)
	if err != nil {
		return nil, p, err
	}
	for i, c := range copies {
		for cn, orig := range p.Canary {
			if !strings.Contains(string(c), "func "+cn+"(") {
				continue
			}
			for rn, o := range p.Real {
				if o == orig && strings.Contains(string(c), "func "+rn+"(") {
					t.Errorf("copy %d holds %s and its canary:\n%s", i, orig, c)
				}
			}
		}
	}
	return append(append(slices.Clone(copies[0]), '\n'), copies[1]...), p, nil
}

// canaryCheck returns the condition of the last if statement in the canary's body
// and in the real test's, for a one-test file.
func conds(t *testing.T, out []byte, p Plan) (real, canary string) {
	t.Helper()
	funcs := regexp.MustCompile(`(?ms)^func (Test\w+)\(t \*testing\.T\) \{\n(.*?)^\}`).FindAllSubmatch(out, -1)
	ifs := regexp.MustCompile(`(?m)^\tif (.*) \{$`)
	for _, f := range funcs {
		m := ifs.FindAllSubmatch(f[2], -1)
		if len(m) == 0 {
			t.Fatalf("no if in %s", f[1])
		}
		c := string(m[len(m)-1][1])
		if p.Canary[string(f[1])] != "" {
			canary = c
		} else {
			real = c
		}
	}
	return real, canary
}

func TestRewriteGoInverts(t *testing.T) {
	tests := []struct {
		name, check, want string // the real check and the canary's
	}{
		{"not equal to a variable", "got != want", "got == want"},
		{"equal", "got == want", "got != want"},
		{"not", "!slices.Equal(a, b)", "slices.Equal(a, b)"},
		{"integer literal", "got != 800", "got != 799"},
		{"zero literal", "n != 0", "n != 1"},
		{"literal first", "3 != got", "2 != got"},
		{"string literal", `s != "ab"`, `s != "ab?"`}, // ? is any letter
		{"char literal", `r != 'b'`, `r != 'a'`},
		{"float literal", "f != 0.5", "f != 0.25"},
		{"or with a literal", "err != nil || n != 2", "err != nil || n != 1"},
		{"or with a literal first", "n != 2 || err != nil", "n != 1 || err != nil"},
		{"or with a literal inside", "(a || n != 5) || err != nil", "(a || n != 4) || err != nil"},
		{"or", "err != nil || n == 2", "err == nil && n != 2"},
		{"and", "a && !b", "!a || b"},
		{"or inside and", "(a || b) && c", "(!a && !b) || !c"},
		{"and inside or", "a && b || c", "(!a || !b) && !c"},
		{"three ors", "a != 1 || b || c == nil", "a != 0 || b || c == nil"},
		{"three ors without a literal", "a != x || b || c == nil", "a == x && !b && c != nil"},
		{"less", "a < b", "!(a < b)"},
		{"call", "bad()", "!bad()"},
		{"with init", "got := f(); got != want", "got := f(); got == want"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n\nimport \"testing\"\n\n// TestX has a comment.\nfunc TestX(t *testing.T) {\n\tif " + tc.check + " {\n\t\tt.Fatalf(\"x\")\n\t}\n}\n"
			out, p, err := rewrite(t, src, rng())
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Real) != 1 || len(p.Canary) != 1 || len(p.Uncovered) != 0 {
				t.Fatalf("plan %+v", p)
			}
			for name := range p.Real {
				if p.Real[name] != "TestX" || !strings.Contains(string(out), "func "+name+"(") {
					t.Errorf("real %s: %+v\n%s", name, p, out)
				}
			}
			if strings.Contains(string(out), "TestX(") || strings.Contains(string(out), "comment") {
				t.Errorf("the original name or a comment survived:\n%s", out)
			}
			real, canary := conds(t, out, p)
			want := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(tc.want), `\?`, "[a-z]") + "$")
			if real != tc.check || !want.MatchString(canary) {
				t.Errorf("real %q canary %q, want %q %q\n%s", real, canary, tc.check, tc.want, out)
			}
		})
	}
}

// TestRewriteGoUncovered: checks a passing test may never reach, or that do not
// fail the test, get no canary.
func TestRewriteGoUncovered(t *testing.T) {
	bodies := map[string]string{
		"in a loop":          "for i := 0; i < n; i++ {\n\t\tif i != 0 {\n\t\t\tt.Fatal(i)\n\t\t}\n\t}",
		"after a return":     "if n == 0 {\n\t\treturn\n\t}\n\tif n != 1 {\n\t\tt.Fatal(n)\n\t}",
		"with an else":       "if n != 1 {\n\t\tt.Fatal(n)\n\t} else {\n\t\tt.Log(n)\n\t}",
		"logs only":          "if n != 1 {\n\t\tt.Log(n)\n\t}",
		"returns first":      "if n != 1 {\n\t\treturn\n\t\tt.Fatal(n)\n\t}",
		"in a subtest":       "t.Run(\"a\", func(t *testing.T) {\n\t\tif n != 1 {\n\t\t\tt.Fatal(n)\n\t\t}\n\t})",
		"another T's report": "if n != 1 {\n\t\tother.Fatal(n)\n\t}",
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			src := "package p\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n\t" + body + "\n}\n"
			out, p, err := rewrite(t, src, rng())
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Canary) != 0 || !slices.Equal(p.Uncovered, []string{"TestX"}) || len(p.Real) != 2 {
				t.Errorf("plan %+v\n%s", p, out)
			}
		})
	}
	// A return inside a function literal does not end the test.
	src := "package p\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n\tf := func() int { return 1 }\n\tif f() != 1 {\n\t\tt.Fatal()\n\t}\n}\n"
	if _, p, err := rewrite(t, src, rng()); err != nil || len(p.Canary) != 1 {
		t.Errorf("plan %+v, %v", p, err)
	}
}

// TestRewriteGoOnlyTests: helpers, benchmarks, TestMain, methods and lower-case
// Testx are left alone; the testing import may be renamed.
func TestRewriteGoOnlyTests(t *testing.T) {
	src := `package p

import tt "testing"

func TestMain(m *tt.M) {}

func Testlower(t *tt.T) {}

func BenchmarkX(b *tt.B) {}

func helper(t *tt.T) {
	if 1 != 2 {
		t.Fatal()
	}
}

type s struct{}

func (s) TestM(t *tt.T) {}

func TestA(t *tt.T) {
	if helperValue() != 1 {
		t.Error("x")
	}
}

func helperValue() int { return 1 }
`
	out, p, err := rewrite(t, src, rng())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Real) != 1 || len(p.Canary) != 1 {
		t.Fatalf("plan %+v", p)
	}
	for _, keep := range []string{"func TestMain(", "func Testlower(", "func BenchmarkX(", "func helper(", "func (s) TestM("} {
		if strings.Count(string(out), keep) != 2 {
			t.Errorf("%s changed:\n%s", keep, out)
		}
	}
	if strings.Contains(string(out), "func TestA(") {
		t.Errorf("TestA kept its name")
	}
}

// TestRewriteGoReproducible: the same seed gives the same file and plan; another
// seed other names.
func TestRewriteGoReproducible(t *testing.T) {
	src := []byte("package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif a() != 1 {\n\t\tt.Fatal()\n\t}\n}\n\nfunc TestB(t *testing.T) {\n\tif !b() {\n\t\tt.Fatal()\n\t}\n}\n")
	a, pa, _ := rewrite(t, string(src), rand.New(rand.NewPCG(1, 1)))
	b, pb, _ := rewrite(t, string(src), rand.New(rand.NewPCG(1, 1)))
	c, _, _ := rewrite(t, string(src), rand.New(rand.NewPCG(2, 1)))
	if string(a) != string(b) || len(pa.Real) != 2 || len(pb.Canary) != 2 {
		t.Errorf("one seed, two rewrites:\n%s\n%s", a, b)
	}
	if string(a) == string(c) {
		t.Errorf("two seeds, one rewrite")
	}
}

func TestRewriteGoRejectsBadSource(t *testing.T) {
	if _, _, err := RewriteGo("x_test.go", []byte("package p\nfunc {"), rng()); err == nil {
		t.Error("no error for a file that does not parse")
	}
}

// FuzzRewriteGo: no panic; an accepted file is rewritten into Go that parses, with
// every planned name declared once and no original test name left.
func FuzzRewriteGo(f *testing.F) {
	f.Add([]byte("package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif x != 1 || !y {\n\t\tt.Fatal()\n\t}\n}\n"), uint64(1))
	f.Add([]byte("package p\nimport \"testing\"\nfunc TestA(t *testing.T) { if a := 'x'; a != 'y' { t.Errorf(\"\") } }\n"), uint64(2))
	f.Add([]byte("package p\nimport \"testing\"\nfunc TestA(t *testing.T) { if 0x1_0 != 2.5e3 && \"\\u00e9\" != `x` { t.Fatal() }; return }\n"), uint64(3))
	f.Fuzz(func(t *testing.T, src []byte, seed uint64) {
		copies, p, err := RewriteGo("x_test.go", src, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			return
		}
		for _, out := range copies {
			if _, err := parser.ParseFile(token.NewFileSet(), "out.go", out, 0); err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, out)
			}
		}
		out := append(append(slices.Clone(copies[0]), '\n'), copies[1]...)
		for _, names := range []map[string]string{p.Real, p.Canary} {
			for n := range names {
				if c := strings.Count(string(out), "func "+n+"("); c != 1 {
					t.Fatalf("%s declared %d times\n%s", n, c, out)
				}
			}
		}
		if len(p.Canary)+2*len(p.Uncovered) != len(p.Real) {
			t.Fatalf("plan %+v: every test gets a canary or is uncovered", p)
		}
	})
}
