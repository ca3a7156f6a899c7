package grade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/task"
)

// TestOracleKeepsInfraErrorsApart: a task graded by a grader that cannot make an
// environment fails its check as an infrastructure error, not as a reference
// that does not resolve it; every result is heard as it is decided; a reference
// that cannot be read stops the run.
func TestOracleKeepsInfraErrorsApart(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.diff")
	if err := os.WriteFile(ref, newFile("a.py", "x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks := []*task.Task{
		{ID: "x", Repo: "/nonexistent", Reference: ref, FailToPass: []string{"a::b"}, Limits: task.Limits{Timeout: 1}},
		{ID: "y", Repo: "/nonexistent", Reference: ref, FailToPass: []string{"a::b"}, Limits: task.Limits{Timeout: 1}},
	}
	var heard []string
	rs, err := Oracle(t.Context(), failingService{}, owner, tasks, Options{}, func(r OracleResult) { heard = append(heard, r.Task) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || strings.Join(heard, ",") != "x,y" {
		t.Fatalf("results %+v, heard %v", rs, heard)
	}
	for _, r := range rs {
		if r.OK || !strings.HasPrefix(r.Problem, "infra_error: ") || !strings.Contains(r.Problem, "no sandbox here") {
			t.Errorf("%s: ok=%v problem %q", r.Task, r.OK, r.Problem)
		}
	}
	tasks[1].Reference = filepath.Join(dir, "missing.diff")
	if rs, err := Oracle(t.Context(), failingService{}, owner, tasks, Options{}, nil); err == nil || len(rs) != 1 {
		t.Fatalf("a missing reference: %d results, %v", len(rs), err)
	}
}
