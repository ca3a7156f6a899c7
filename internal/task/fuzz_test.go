package task

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzLoad feeds mutated task.yaml files to the loader against real task
// directories (the fixture and the built-in tasks). It must never panic, every
// rejection must be an *Error, and whatever it accepts must satisfy invariants
// checked here independently from the raw YAML.
func FuzzLoad(f *testing.F) {
	dirs := []string{writeFixture(f)}
	f.Add(uint8(0), []byte(fixtureYAML))
	f.Add(uint8(0), []byte(strings.Replace(fixtureYAML, "pids: 32", "pids: 3.5", 1)))
	f.Add(uint8(0), []byte(strings.Replace(fixtureYAML, "id: fix-1.0", "id: &a x\nalias: *a", 1)))
	f.Add(uint8(0), []byte("id: [a, b]\n"))
	if suiteErr == nil {
		for _, tk := range suiteTasks {
			dirs = append(dirs, tk.Dir)
			data, err := os.ReadFile(filepath.Join(tk.Dir, FileName))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(len(dirs)-1), data)
		}
	}
	for i, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			f.Fatal(err)
		}
		dirs[i] = real
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		dir := dirs[int(which)%len(dirs)]
		tk, err := load(dir, data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("rejection %v is %T, want *Error", err, err)
			}
			return
		}
		checkAccepted(t, data, tk)
	})
}

var (
	oracleID   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	oracleKeys = map[string]bool{
		"id": true, "title": true, "statement": true, "language": true, "public_tests": true,
		"hidden_tests": true, "protected": true, "setup": true, "test_command": true,
		"result_format": true, "fail_to_pass": true, "pass_to_pass": true, "limits": true,
		"reference": true, "metadata": true, "public_test_command": true,
	}
)

func checkAccepted(t *testing.T, data []byte, tk *Task) {
	t.Helper()
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatalf("accepted a file that is not a YAML mapping: %v", err)
	}
	for k := range raw {
		if !oracleKeys[k] {
			t.Fatalf("accepted the unknown field %q", k)
		}
	}
	if l, ok := raw["limits"].(map[string]any); ok {
		for k := range l {
			if k != "timeout" && k != "memory" && k != "pids" {
				t.Fatalf("accepted the unknown field limits.%s", k)
			}
		}
	}
	switch {
	case !oracleID.MatchString(tk.ID) || strings.Trim(tk.ID, ".") == "":
		t.Fatalf("accepted id %q", tk.ID)
	case tk.Title == "" || strings.ContainsAny(tk.Title, "\r\n"):
		t.Fatalf("accepted title %q", tk.Title)
	case strings.TrimSpace(tk.Statement) == "":
		t.Fatal("accepted an empty statement")
	case tk.Language != Python && tk.Language != Go:
		t.Fatalf("accepted language %q", tk.Language)
	case len(tk.TestCommand) == 0 || tk.TestCommand[0] == "":
		t.Fatalf("accepted test_command %q", tk.TestCommand)
	case len(tk.PublicTestCommand) == 0 || tk.PublicTestCommand[0] == "":
		t.Fatalf("accepted public_test_command %q", tk.PublicTestCommand)
	case tk.Setup != nil && tk.Setup[0] == "":
		t.Fatalf("accepted setup %q", tk.Setup)
	case len(tk.FailToPass) == 0:
		t.Fatal("accepted an empty fail_to_pass")
	case tk.Limits.Timeout <= 0 || tk.Limits.Memory <= 0 || tk.Limits.Pids <= 0:
		t.Fatalf("accepted limits %+v", tk.Limits)
	case !within(tk.Reference, tk.Dir) || within(tk.Reference, tk.Repo) || !within(tk.Hidden, tk.Dir) || within(tk.Hidden, tk.Repo):
		t.Fatalf("accepted reference %s / hidden %s", tk.Reference, tk.Hidden)
	}
	switch tk.ResultFormat {
	case JUnit, GoTestJSON, TAP, ExitCode:
	default:
		t.Fatalf("accepted result_format %q", tk.ResultFormat)
	}
	seen := map[string]bool{}
	for _, id := range append(append([]string(nil), tk.FailToPass...), tk.PassToPass...) {
		if id == "" || seen[id] || strings.TrimSpace(id) != id {
			t.Fatalf("accepted test id %q (duplicate or blank)", id)
		}
		seen[id] = true
		if tk.ResultFormat != TAP && tk.ResultFormat != ExitCode && !strings.Contains(id, "::") {
			t.Fatalf("accepted %s test id %q", tk.ResultFormat, id)
		}
	}
}

// FuzzParse feeds arbitrary output to the result parsers: no panics, every error is
// a *ResultsError, and accepted junit and go-test-json results agree with the exit
// status; accepted junit carries the nonce.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0), []byte(`<testsuites agentbox-nonce="N"><testcase classname="t.C" name="a" file="t.py"/></testsuites>`), 0)
	f.Add(uint8(1), []byte(`{"Action":"pass","Package":"p","Test":"TestA"}`+"\n"), 0)
	f.Add(uint8(2), []byte("1..2\nok 1 - a\nnot ok 2 b # TODO\n"), 1)
	f.Add(uint8(3), []byte{}, 3)
	formats := []ResultFormat{JUnit, GoTestJSON, TAP, ExitCode}
	f.Fuzz(func(t *testing.T, which uint8, data []byte, exit int) {
		format := formats[int(which)%len(formats)]
		r, err := Parse(format, Output{ExitCode: exit, Stdout: data, ResultsFile: data, Nonce: "N"})
		if err != nil {
			if !errors.Is(err, ErrResults) {
				t.Fatalf("error %v is not ErrResults", err)
			}
			return
		}
		if (format == JUnit || format == GoTestJSON) && r.clean() != (exit == 0) {
			t.Fatalf("accepted results (clean=%v) with exit status %d", r.clean(), exit)
		}
		if format == JUnit && !strings.Contains(string(data), "N") {
			t.Fatal("accepted junit results without the nonce")
		}
	})
}

// FuzzProtected checks Protected's invariants on arbitrary names: no panics, names
// that leave the repository are protected, spelling does not matter, and whatever
// lies under a protected path is protected.
func FuzzProtected(f *testing.F) {
	tk := &Task{}
	for _, g := range append(DefaultProtected(), "docs/**", "/weird\\[1\\].py") {
		p, err := compileGlob(g)
		if err != nil {
			f.Fatal(err)
		}
		tk.protected = append(tk.protected, p)
	}
	for _, s := range []string{"billing.py", "tests/x.py", "a/../../b", "./go.mod", "x/.git/y", "", "/abs", "docs", "weird[1].py"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := tk.Protected(name)
		if strings.ContainsRune(name, 0) || name == "" || path.IsAbs(name) {
			if !got {
				t.Fatalf("Protected(%q) = false for a name outside the repository", name)
			}
			return
		}
		clean := path.Clean(name)
		if clean == ".." || strings.HasPrefix(clean, "../") {
			if !got {
				t.Fatalf("Protected(%q) = false for a name that leaves the repository", name)
			}
			return
		}
		if tk.Protected(clean) != got || tk.Protected("./"+name) != got {
			t.Fatalf("Protected(%q) = %v depends on spelling", name, got)
		}
		if clean == "." {
			if !got {
				t.Fatalf("Protected(%q) = false for the repository root", name)
			}
			return
		}
		if got && !tk.Protected(clean+"/child") {
			t.Fatalf("Protected(%q) but not a file under it", name)
		}
		if !tk.Protected(clean+"/tests/x.py") && clean != "." {
			t.Fatalf("tests/ under %q is not protected", clean)
		}
	})
}
