package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestEvalAtGvisor: `eval --isolation gvisor` runs the agent's session and the
// grading in gVisor environments and records the level in run.json and
// report.json; the grade of a built-in task there resolves. A level that runs no
// environment is refused by agent, grade and eval, naming why.
func TestEvalAtGvisor(t *testing.T) {
	for _, cmd := range [][]string{
		{"agent", "--isolation", "process", "--goal", "x"},
		{"grade", "--isolation", "process", "--oracle"},
		{"eval", "--isolation", "process"},
		{"eval", "--isolation", "vm"},
	} {
		if _, e, st := cli(t, cmd...); st == 0 || !strings.Contains(e, "namespace or gvisor") {
			t.Errorf("%v: status %d, stderr %q", cmd, st, e)
		}
	}
	testenv.SkipShort(t, "an eval attempt and its grade in gVisor")
	testenv.RequireRoot(t)
	_, err := exec.LookPath("runsc")
	testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
	out := filepath.Join(t.TempDir(), "results")
	stdout, stderr, status := cli(t, "eval", "--isolation", "gvisor", "--tasks", "calc", "--out", out, "--progress", "none")
	if status != 0 {
		t.Fatalf("eval: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	var rep struct {
		Isolation string `json:"isolation"`
		Summary   struct {
			Resolved int `json:"resolved"`
		} `json:"summary"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil || rep.Isolation != "gvisor" || rep.Summary.Resolved != 1 {
		t.Errorf("report.json: isolation %q, resolved %d (%v)", rep.Isolation, rep.Summary.Resolved, err)
	}
	var run struct {
		Flags map[string]string `json:"flags"`
	}
	b, _ = os.ReadFile(filepath.Join(out, "run.json"))
	if err := json.Unmarshal(b, &run); err != nil || run.Flags["isolation"] != "gvisor" {
		t.Errorf("run.json flags: %v (%v)\n%s", run.Flags, err, b)
	}
}
