package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// calcWorkspace writes the calc task's repository to a fresh directory.
func calcWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tasks, err := task.Builtin(filepath.Join(dir, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	for _, tk := range tasks {
		if tk.ID == "calc" {
			if err := os.CopyFS(ws, os.DirFS(tk.Repo)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ws
}

// run runs the agentbox binary with an exact environment.
func run(t *testing.T, environ []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(agentbox, args...)
	cmd.Env = environ
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), status
}

// TestAgentCLI runs seed 002's modes through `agentbox agent`, then reads their
// traces back with `trace stats` and `replay`.
func TestAgentCLI(t *testing.T) {
	testenv.RequireRoot(t)
	ws := calcWorkspace(t)
	out := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + out}
	traces := map[string]string{}
	for _, tc := range []struct {
		mode   string
		extra  []string
		status int
		want   []string
	}{
		{"good", nil, 0, []string{"stop_reason: done", "steps: 4", "tool_calls: 4"}},
		{"loop", []string{"--max-steps", "4"}, 1, []string{"stop_reason: no_progress", "steps: 3"}},
		{"escape", nil, 1, []string{"stop_reason: policy_stop", "EPERM", "steps: 2"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			tr := filepath.Join(out, tc.mode+".trace.jsonl")
			ev := filepath.Join(out, tc.mode+".events.jsonl")
			diff := filepath.Join(out, tc.mode+".diff")
			args := append([]string{"agent", "--workspace", ws, "--goal", "Fix calc.add.", "--mode", tc.mode,
				"--trace", tr, "--events", ev, "--diff-out", diff}, tc.extra...)
			stdout, stderr, status := run(t, env, args...)
			if status != tc.status {
				t.Fatalf("exit %d\n%s\n%s", status, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			d, _ := os.ReadFile(diff)
			if (tc.mode == "good") != bytes.Contains(d, []byte("+    return a + b")) {
				t.Errorf("diff:\n%s", d)
			}
			traces[tc.mode] = tr
			stats, _, status := run(t, env, "trace", "stats", ev)
			if status != 0 || !strings.Contains(stats, "stop "+strings.TrimPrefix(tc.want[0], "stop_reason: ")) {
				t.Errorf("trace stats of the event log:\n%s", stats)
			}
			rep, _, status := run(t, env, "replay", tr)
			if status != 0 || !strings.Contains(rep, "no divergence") {
				t.Errorf("replay exit %d:\n%s", status, rep)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.py")); !bytes.Contains(b, []byte("return a - b\n\n\ndef sub")) {
		t.Fatal("the workspace directory was modified")
	}
	stdout, _, status := run(t, env, "replay", traces["good"], "--against", traces["loop"])
	if status != 1 || !strings.Contains(stdout, "first divergence at step 2: decision") {
		t.Fatalf("exit %d:\n%s", status, stdout)
	}
	js, _, _ := run(t, env, "trace", "stats", "--json", traces["escape"])
	var s struct {
		FailuresByCode map[string]int `json:"failures_by_code"`
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil || s.FailuresByCode["EPERM"] != 1 {
		t.Fatalf("%v %s", err, js)
	}
}

// TestAgentCLIKey runs a model session through the CLI with a planted key and
// searches everything the command wrote or printed for it.
func TestAgentCLIKey(t *testing.T) {
	testenv.RequireRoot(t)
	const key = "sk-cli-PLANTED-KEY-9f8e7d6c5b4a3210"
	ws := calcWorkspace(t)
	out := t.TempDir()
	srv := modeltest.NewAnthropic(t,
		modeltest.Turn{Calls: []modeltest.Call{{Name: "exec_run", Args: `{"command":"env"}`}}},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "exec_run", Args: `{"command":"echo ` + key + `"}`}}},
		modeltest.Turn{Text: "stopping"})
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + out, "ANTHROPIC_API_KEY=" + key}
	tr, ev, diff := filepath.Join(out, "t.jsonl"), filepath.Join(out, "e.jsonl"), filepath.Join(out, "d.diff")
	stdout, stderr, status := run(t, env, "agent", "--workspace", ws, "--goal", "look around", "--policy", "anthropic",
		"--model", "claude-test", "--base-url", srv.URL, "--trace", tr, "--events", ev, "--diff-out", diff, "--json")
	if status != 1 || len(srv.Received()) != 3 || srv.Received()[0].Header.Get("X-Api-Key") != key {
		t.Fatalf("exit %d, %d requests\n%s\n%s", status, len(srv.Received()), stdout, stderr)
	}
	for name, b := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.Contains(b, key) {
			t.Errorf("the key is in %s", name)
		}
	}
	for _, p := range []string{tr, ev, diff} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("the key is in %s", filepath.Base(p))
		}
	}
	if b, _ := os.ReadFile(tr); !bytes.Contains(b, []byte("[redacted]")) || !bytes.Contains(b, []byte("PATH=")) {
		t.Fatal("the trace does not show the commands' output: the test would prove nothing")
	}
}
