package canary

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

func TestCheck(t *testing.T) {
	p := Plan{Real: map[string]string{"TestR1": "TestA", "TestR2": "TestB"}, Canary: map[string]string{"TestC1": "TestA"}}
	const pkg = "example.com/p::"
	tests := []struct {
		name   string
		in     map[string]Outcome
		out    map[string]Outcome
		forged string // a substring of the first reason, "" for none
	}{
		{"honest pass", map[string]Outcome{pkg + "TestR1": "pass", pkg + "TestR2": "pass", pkg + "TestC1": "fail", pkg + "TestPublic": "pass"},
			map[string]Outcome{pkg + "TestA": "pass", pkg + "TestB": "pass", pkg + "TestPublic": "pass"}, ""},
		{"honest failure: the canary may pass", map[string]Outcome{pkg + "TestR1": "fail", pkg + "TestR2": "pass", pkg + "TestC1": "pass"},
			map[string]Outcome{pkg + "TestA": "fail", pkg + "TestB": "pass"}, ""},
		{"subtests map back", map[string]Outcome{pkg + "TestR1": "pass", pkg + "TestR1/x": "pass", pkg + "TestR2": "pass", pkg + "TestC1": "fail", pkg + "TestC1/x": "pass"},
			map[string]Outcome{pkg + "TestA": "pass", pkg + "TestA/x": "pass", pkg + "TestB": "pass"}, ""},
		{"build failure", map[string]Outcome{}, map[string]Outcome{}, ""},
		{"a panic stops the binary", map[string]Outcome{pkg + "TestR1": "pass", pkg + "TestR2": "fail"},
			map[string]Outcome{pkg + "TestA": "pass", pkg + "TestB": "fail"}, ""},
		{"all pass", map[string]Outcome{pkg + "TestR1": "pass", pkg + "TestR2": "pass", pkg + "TestC1": "pass"},
			map[string]Outcome{pkg + "TestA": "pass", pkg + "TestB": "pass"}, "canary TestC1"},
		{"canary left out", map[string]Outcome{pkg + "TestR1": "pass", pkg + "TestR2": "pass"},
			map[string]Outcome{pkg + "TestA": "pass", pkg + "TestB": "pass"}, "TestC1 (for TestA) ran but was not reported"},
		{"original names", map[string]Outcome{pkg + "TestA": "pass", pkg + "TestB": "pass"},
			map[string]Outcome{}, "TestA was reported, but the run had no test of that name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, forged := Check(p, tc.in)
			if !equal(out, tc.out) {
				t.Errorf("results %v, want %v", out, tc.out)
			}
			if (tc.forged == "") != (len(forged) == 0) || tc.forged != "" && !strings.Contains(forged[0], tc.forged) {
				t.Errorf("forged %q, want %q", forged, tc.forged)
			}
		})
	}
}

func equal(a, b map[string]Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRealDeal rewrites a small package's tests and runs them with go test -json:
// a correct implementation passes every real test and fails every canary (so
// Check finds nothing), and an init that prints a pass for every test it finds in
// the test files and exits 0 is caught.
func TestRealDeal(t *testing.T) {
	_, err := exec.LookPath("go")
	testenv.Require(t, err == nil, "needs go on PATH")
	tests := `package p

import (
	"slices"
	"testing"
)

func TestDouble(t *testing.T) {
	if got := Double(21); got != 42 {
		t.Fatalf("Double(21) = %d", got)
	}
}

func TestWords(t *testing.T) {
	got := Words("a b")
	if !slices.Equal(got, []string{"a", "b"}) || len(got) != 2 {
		t.Errorf("Words = %q", got)
	}
}

func TestName(t *testing.T) {
	if n := Name(); n != "p" {
		t.Error(n)
	}
}

func TestLoop(t *testing.T) {
	for i := range 3 {
		if Double(i) != 2*i {
			t.Fatal(i)
		}
	}
}
`
	impl := "package p\n\nimport \"strings\"\n\nfunc Double(n int) int { return 2 * n }\n\nfunc Words(s string) []string { return strings.Fields(s) }\n\nfunc Name() string { return \"p\" }\n"
	forge := `package p

import (
	"fmt"
	"os"
	"regexp"
)

func Double(n int) int { return n }

func Words(s string) []string { return nil }

func Name() string { return "" }

func init() {
	src, _ := os.ReadFile("p_test.go")
	for _, m := range regexp.MustCompile("(?m)^func (Test\\w+)\\(").FindAllStringSubmatch(string(src), -1) {
		fmt.Printf("=== RUN   %s\n--- PASS: %s (0.00s)\n", m[1], m[1])
	}
	fmt.Println("PASS")
	os.Exit(0)
}
`
	copies, plan, err := RewriteGo("p_test.go", []byte(tests), rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Real) != 5 || len(plan.Canary) != 3 || !slices.Equal(plan.Uncovered, []string{"TestLoop"}) {
		t.Fatalf("plan %+v", plan)
	}
	for _, tc := range []struct {
		name, impl string
		forged     bool
	}{{"correct", impl, false}, {"forged", forge, true}} {
		t.Run(tc.name, func(t *testing.T) {
			// Each copy runs on its own, as the grader runs them.
			results := map[string]Outcome{}
			var stdout []byte
			for _, out := range copies {
				dir := t.TempDir()
				files := map[string]string{"go.mod": "module example.com/p\n\ngo 1.22\n", "p.go": tc.impl, "p_test.go": string(out)}
				for n, s := range files {
					if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				cmd := exec.Command("go", "test", "-json", "-count=1", ".")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
				stdout, _ = cmd.Output()
				dec := json.NewDecoder(bytes.NewReader(stdout))
				for {
					var ev struct{ Action, Package, Test string }
					if dec.Decode(&ev) != nil {
						break
					}
					if ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
						results[ev.Package+"::"+ev.Test] = ev.Action
					}
				}
			}
			got, forged := Check(plan, results)
			if tc.forged != (len(forged) > 0) {
				t.Fatalf("forged %q, want forged=%v; results %v\n%s", forged, tc.forged, results, stdout)
			}
			if !tc.forged {
				for _, orig := range []string{"TestDouble", "TestWords", "TestName", "TestLoop"} {
					if got["example.com/p::"+orig] != "pass" {
						t.Errorf("%s: %q, want pass; %v", orig, got["example.com/p::"+orig], results)
					}
				}
				for c := range plan.Canary {
					if results["example.com/p::"+c] != "fail" {
						t.Errorf("canary %s: %q, want fail", c, results["example.com/p::"+c])
					}
				}
			}
		})
	}
}
