package grade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
)

func TestTouched(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  []string
	}{
		{"new file", string(newFile("conftest.py", "x")), []string{"conftest.py"}},
		{"rename names both sides", "diff --git a/tests/test_a.py b/a.py\nsimilarity index 100%\nrename from tests/test_a.py\nrename to a.py\n",
			[]string{"a.py", "tests/test_a.py"}},
		{"deletion", "diff --git a/x_test.go b/x_test.go\ndeleted file mode 100644\n--- a/x_test.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package x\n",
			[]string{"x_test.go"}},
		{"plain unified diff", "--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-a\n+b\n", []string{"b.py", "b/b.py"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := touched([]byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("touched = %v, want %v", got, tc.want)
			}
		})
	}
}

// failingService fails every Create; any other call would panic (nil interface).
type failingService struct{ Service }

func (failingService) Create(context.Context, env.CreateOptions) (env.Info, error) {
	return env.Info{}, errors.New("no sandbox here")
}

// TestInfraErrorKeptApart: a grader that cannot make an environment reports an
// infra error, not a patch that failed.
func TestInfraErrorKeptApart(t *testing.T) {
	tk := &task.Task{ID: "x", Repo: "/nonexistent", FailToPass: []string{"a::b"}, Limits: task.Limits{Timeout: 1}}
	v, err := Grade(t.Context(), failingService{}, owner, tk, newFile("a.py", "x"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Resolved || v.Tampered || !strings.Contains(v.InfraError, "no sandbox here") {
		t.Errorf("verdict %s", dump(v))
	}
	if !slices.Equal(v.FailToPass.Failed, tk.FailToPass) {
		t.Errorf("fail_to_pass.failed = %v, want every listed id", v.FailToPass.Failed)
	}
}

// FuzzTouched: parsing an untrusted patch never panics, and every name reported
// comes from the patch text (so nothing the patch touches is invented or lost to
// a rewrite other than the a/ b/ strip).
func FuzzTouched(f *testing.F) {
	f.Add(string(newFile("conftest.py", "x")))
	f.Add("--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add("diff --git a/x b/y\nrename from x\nrename to y\n")
	f.Fuzz(func(t *testing.T, patch string) {
		names, err := touched([]byte(patch))
		if err != nil {
			return
		}
		for _, n := range names {
			if !strings.Contains(patch, n) {
				t.Errorf("name %q not in the patch", n)
			}
		}
	})
}
