package task

import (
	"bytes"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinLoads(t *testing.T) {
	tasks := builtin(t)
	var ids []string
	for _, tk := range tasks {
		ids = append(ids, tk.ID)
	}
	want := []string{"C01", "C02", "C03", "G01", "G02", "G03", "J01", "J02", "calc"}
	if !slices.Equal(ids, want) {
		t.Fatalf("built-in ids %v, want %v", ids, want)
	}
	for _, tk := range tasks {
		if filepath.Base(tk.Dir) != tk.ID {
			t.Errorf("%s: extracted into %s; archive names and ids should agree", tk.ID, tk.Dir)
		}
		judged := slices.Contains(tk.HiddenFiles, "agentbox_judge.py")
		if !judged && ((tk.Language == Go) != (tk.ResultFormat == GoTestJSON) || (tk.Language == Python) != (tk.ResultFormat == JUnit)) ||
			judged && tk.ResultFormat != JUnit {
			t.Errorf("%s: language %s with result format %s", tk.ID, tk.Language, tk.ResultFormat)
		}
	}
}

// TestBuiltinResolves is the acceptance test of the suite itself: on the starting
// code every fail_to_pass test fails and every pass_to_pass test passes; with the
// reference patch all of them pass; and the two lists name exactly the tests the
// run reports, so no hidden test goes unlisted.
func TestBuiltinResolves(t *testing.T) {
	for _, tk := range builtin(t) {
		t.Run(tk.ID, func(t *testing.T) {
			t.Parallel()
			patch, err := tk.ReadReference()
			if err != nil {
				t.Fatal(err)
			}
			t.Run("reference", func(t *testing.T) {
				t.Parallel()
				r := runTask(t, tk, runOpts{patch: patch})
				if r.err != nil {
					t.Fatalf("Parse: %v\n%s", r.err, r.log)
				}
				if r.out.ExitCode != 0 {
					t.Errorf("exit status %d, want 0", r.out.ExitCode)
				}
				for _, id := range slices.Concat(tk.FailToPass, tk.PassToPass) {
					if o := r.res.Outcome(id); o != OutcomePass {
						t.Errorf("%s: %q, want pass", id, o)
					}
				}
				listed := slices.Sorted(slices.Values(slices.Concat(tk.FailToPass, tk.PassToPass)))
				if got := r.res.IDs(); !slices.Equal(got, listed) {
					t.Errorf("reported ids %v\nlisted ids   %v", got, listed)
				}
				if t.Failed() {
					t.Log(r.log)
				}
			})
			t.Run("none", func(t *testing.T) {
				t.Parallel()
				r := runTask(t, tk, runOpts{})
				if r.err != nil {
					t.Fatalf("Parse: %v\n%s", r.err, r.log)
				}
				if r.out.ExitCode == 0 {
					t.Errorf("exit status 0 on the starting code")
				}
				for _, id := range tk.FailToPass {
					if o := r.res.Outcome(id); o != OutcomeFail {
						t.Errorf("fail_to_pass %s: %q on the starting code, want fail", id, o)
					}
				}
				for _, id := range tk.PassToPass {
					if o := r.res.Outcome(id); o != OutcomePass {
						t.Errorf("pass_to_pass %s: %q on the starting code, want pass", id, o)
					}
				}
				if t.Failed() {
					t.Log(r.log)
				}
			})
		})
	}
}

// TestBuiltinSharedFiles keeps the copies of the hidden runner and of the Go
// witness identical across tasks, so a fix to one reaches all; a task judged out
// of process (agentbox_judge.py) has the judge and its spec only.
func TestBuiltinSharedFiles(t *testing.T) {
	var runner, witness, judge []byte
	pkgLine := regexp.MustCompile(`(?m)^package \w+$`)
	for _, tk := range builtin(t) {
		switch {
		case slices.Contains(tk.HiddenFiles, "agentbox_judge.py"):
			// Judged out of process: the judge (the same in every task), one spec and,
			// for a worker not in Python, the worker's source.
			data := mustRead(t, filepath.Join(tk.Hidden, "agentbox_judge.py"))
			if judge == nil {
				judge = data
			} else if !bytes.Equal(judge, data) {
				t.Errorf("%s: hidden/agentbox_judge.py differs from the other judged tasks' copy", tk.ID)
			}
			if len(tk.TestCommand) != 6 || !slices.Equal(tk.TestCommand[:5], []string{"python3", "-I", "-S", "-B", "agentbox_judge.py"}) ||
				!slices.Contains(tk.HiddenFiles, tk.TestCommand[5]) {
				t.Errorf("%s: test_command %q: want the judge, isolated, on its spec", tk.ID, tk.TestCommand)
			}
		case tk.Language == Python:
			data := mustRead(t, filepath.Join(tk.Hidden, "agentbox_unittest.py"))
			if runner == nil {
				runner = data
			} else if !bytes.Equal(runner, data) {
				t.Errorf("%s: hidden/agentbox_unittest.py differs from the other Python tasks' copy", tk.ID)
			}
			if !slices.Equal(tk.TestCommand, []string{"python3", "-I", "-S", "-B", "agentbox_unittest.py", "tests"}) {
				t.Errorf("%s: test_command %q does not run the hidden runner isolated", tk.ID, tk.TestCommand)
			}
		case tk.Language == Go:
			data := pkgLine.ReplaceAll(mustRead(t, filepath.Join(tk.Hidden, "agentbox_witness_test.go")), []byte("package X"))
			if witness == nil {
				witness = data
			} else if !bytes.Equal(witness, data) {
				t.Errorf("%s: hidden/agentbox_witness_test.go differs from the other Go tasks' copy", tk.ID)
			}
		}
	}
	if runner == nil || witness == nil || judge == nil {
		t.Fatal("the suite lacks a Python, a Go or a judged task")
	}
}

// TestBuiltinHygiene checks what review would: Go files are gofmt'd, public tests
// of Go tasks leave TestMain to the witness, and no statement names a hidden test.
func TestBuiltinHygiene(t *testing.T) {
	testName := regexp.MustCompile(`(?m)^\s*(?:def (test\w+)|func (Test\w+))`)
	for _, tk := range builtin(t) {
		for _, root := range []string{tk.Repo, tk.Hidden} {
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
					return err
				}
				src := mustRead(t, p)
				if got, err := format.Source(src); err != nil || !bytes.Equal(got, src) {
					t.Errorf("%s: not gofmt'd (%v)", p, err)
				}
				if root == tk.Repo && bytes.Contains(src, []byte("func TestMain(")) {
					t.Errorf("%s: public tests must not define TestMain; the hidden witness does", p)
				}
				return nil
			})
		}
		for _, f := range tk.HiddenFiles {
			for _, m := range testName.FindAllSubmatch(mustRead(t, filepath.Join(tk.Hidden, f)), -1) {
				name := string(m[1]) + string(m[2])
				if strings.Contains(tk.Statement, name) {
					t.Errorf("%s: the statement names the hidden test %s", tk.ID, name)
				}
			}
		}
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
