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

// TestBuiltinJudged: every built-in task is judged out of process by the one
// judge, isolated, on its own spec, and a Go task builds its worker from hidden/
// (so the code under test never shares a process with the checks).
func TestBuiltinJudged(t *testing.T) {
	judge, err := builtinFS.ReadFile("builtin/" + judgeName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range builtin(t) {
		if got := mustRead(t, filepath.Join(tk.Hidden, judgeName)); !bytes.Equal(got, judge) {
			t.Errorf("%s: hidden/%s is not the shared judge", tk.ID, judgeName)
		}
		if len(tk.TestCommand) != 6 || !slices.Equal(tk.TestCommand[:5], []string{"python3", "-I", "-S", "-B", judgeName}) ||
			!slices.Contains(tk.HiddenFiles, tk.TestCommand[5]) {
			t.Errorf("%s: test_command %q: want the judge, isolated, on its spec", tk.ID, tk.TestCommand)
		}
		if tk.ResultFormat != JUnit {
			t.Errorf("%s: result format %s, want junit (the judge's)", tk.ID, tk.ResultFormat)
		}
		spec := string(mustRead(t, filepath.Join(tk.Hidden, tk.TestCommand[5])))
		worker := slices.Contains(tk.HiddenFiles, "agentbox_worker/main.go")
		if (tk.Language == Go) != worker || worker != strings.Contains(spec, `WORKER = ["{tmp}/worker"]`) {
			t.Errorf("%s: a %s task with worker source %v; a Go task needs hidden/agentbox_worker and a spec that builds it", tk.ID, tk.Language, worker)
		}
		for _, id := range slices.Concat(tk.FailToPass, tk.PassToPass) {
			if !strings.HasPrefix(id, tk.TestCommand[5]+"::test_") {
				t.Errorf("%s: test id %q is not one of the spec's checks", tk.ID, id)
			}
		}
	}
}

// TestBuiltinHygiene checks what review would: Go files are gofmt'd, and no
// statement names a hidden test.
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
