package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestDaemonDiffAfterTests: a correct fix made in a daemon environment, diffed
// after the tests ran there, is graded resolved. Issue 13: the diff carried the
// __pycache__/*.pyc files the test run wrote, and the grader called it tampered.
// (The host has no pytest: the unittest run writes real .pyc files, and the
// .pytest_cache pytest would write is made by hand.)
func TestDaemonDiffAfterTests(t *testing.T) {
	testenv.SkipShort(t, "grades in sandboxes (~15 s)")
	d := startDaemon(t, t.TempDir())
	repo := filepath.Join(d.work, "calc")
	taskDir := filepath.Join(t.TempDir(), "calc-task")
	for _, args := range [][]string{{"task", "export", "calc", repo}, {"task", "export", "--task", "calc", taskDir}} {
		if _, e, st := cli(t, args...); st != 0 {
			t.Fatalf("%v: %s", args, e)
		}
	}
	out, e, st := d.cli("env", "create", "--workspace", repo)
	if st != 0 {
		t.Fatalf("create: %s", e)
	}
	id := strings.TrimSpace(out)
	defer d.cli("env", "rm", id)
	for _, c := range []string{
		"sed -i 's/return a - b/return a + b/' calc.py && sed -i '0,/return a + b/! s/return a + b/return a - b/' calc.py",
		"python3 -m unittest -v",
		"mkdir -p .pytest_cache/v/cache && echo '{}' > .pytest_cache/v/cache/lastfailed",
		"ls tests/__pycache__/*.pyc",
	} {
		if o, e, st := d.cli("exec", id, "--", "sh", "-c", c); st != 0 {
			t.Fatalf("%s: %d %s %s", c, st, o, e)
		}
	}
	diff, e, st := d.cli("diff", id)
	if st != 0 || !strings.Contains(diff, "+    return a + b") {
		t.Fatalf("diff: %d %s\n%s", st, e, diff)
	}
	if strings.Contains(diff, ".pyc") || strings.Contains(diff, "pytest_cache") {
		t.Fatalf("diff carries test leftovers:\n%s", diff)
	}
	patch := filepath.Join(t.TempDir(), "fix.diff")
	os.WriteFile(patch, []byte(diff), 0o644)
	stdout, stderr, status := cli(t, "grade", "--task", taskDir, "--patch", patch, "--json")
	var v struct {
		Resolved bool `json:"resolved"`
		Tampered bool `json:"tampered"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || status != 0 || !v.Resolved || v.Tampered {
		t.Fatalf("grade: status %d (%v), verdict %s, stderr %s", status, err, stdout, stderr)
	}
}
