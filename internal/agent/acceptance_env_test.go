package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// calcEnv copies the built-in calc task's repository to a host directory, puts a
// secret next to it, opens an environment on it with the built-in tools, and
// returns the environment, the workspace and the secret's path.
func calcEnv(t *testing.T) (*tool.Env, string, string) {
	t.Helper()
	dir := t.TempDir()
	tasks, err := task.Builtin(filepath.Join(dir, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var repo string
	for _, tk := range tasks {
		if tk.ID == "calc" {
			repo = tk.Repo
		}
	}
	ws := filepath.Join(dir, "ws")
	if err := os.CopyFS(ws, os.DirFS(repo)); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-HOST-CONTENT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := tool.OpenEnv(context.Background(), tool.EnvOptions{Service: envtest.New(t), Owner: env.Owner{Tenant: "test", Task: "calc"},
		Workspace: ws, Tools: tool.BuiltinOptions{TestCommand: []string{"python3", "-B", "-m", "unittest", "-v"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	return e, ws, secret
}

// recorded runs a session writing its events and trace to files, and returns the
// result and the bytes of both files.
func recorded(t *testing.T, o Options, redact ...string) (*Result, []byte, []byte, []trace.Step) {
	t.Helper()
	dir := t.TempDir()
	ev, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := os.Create(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	proj := trace.NewProjector(tr)
	o.Log = trace.NewLog(trace.LogOptions{Session: NewSessionID(), Sinks: []trace.Sink{trace.NewJSONL(ev), proj}, Redact: redact})
	if o.Goal == "" {
		o.Goal = "calc.add(a, b) returns a - b; make it return a + b. Run the tests before finishing."
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ev.Close()
	tr.Close()
	evb, _ := os.ReadFile(ev.Name())
	trb, _ := os.ReadFile(tr.Name())
	return res, evb, trb, proj.Steps()
}

// TestSeedAcceptance is seed 002's acceptance on a sandboxed environment: good is
// done in 4 steps, loop with max-steps 4 stops for no progress at step 3, escape
// gets EPERM on step 1 and leaves the host file untouched and unread.
func TestSeedAcceptance(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		maxSteps  int
		stop      StopReason
		steps     int
		toolCalls int
	}{
		{ModeGood, 0, StopDone, 4, 4},
		{ModeLoop, 4, StopNoProgress, 3, 3},
		{ModeEscape, 0, StopPolicy, 2, 1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e, ws, secret := calcEnv(t)
			before, _ := os.Stat(secret)
			res, evb, trb, steps := recorded(t, Options{Policy: &Scripted{Mode: tc.mode}, Tools: e.Registry,
				Limits: Limits{MaxSteps: tc.maxSteps}, EnvID: e.ID})
			if res.StopReason != tc.stop || res.Steps != tc.steps || res.ToolCalls != tc.toolCalls {
				t.Fatalf("%s (%s) after %d steps and %d calls", res.StopReason, res.Detail, res.Steps, res.ToolCalls)
			}
			if n := bytes.Count(trb, []byte("\n")); n != tc.steps || len(steps) != tc.steps {
				t.Fatalf("%d trace lines", n)
			}
			diff, err := e.Diff(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			switch tc.mode {
			case ModeGood:
				if !bytes.Contains(diff, []byte("-    return a - b\n+    return a + b\n")) || addedLines(diff) != 1 {
					t.Fatalf("diff:\n%s", diff)
				}
				if s := res.State; !s.Finished || s.Tests == nil || !s.Tests.Passed || s.Tests.Version != s.Version {
					t.Fatalf("state %+v", s)
				}
			case ModeLoop:
				if len(diff) != 0 {
					t.Fatalf("reading changed the workspace:\n%s", diff)
				}
			case ModeEscape:
				r := steps[0].Result
				if r == nil || r.Error == nil || r.Error.Code != tool.EPERM || r.Error.Retryable {
					t.Fatalf("step 1: %+v", r)
				}
				after, _ := os.Stat(secret)
				b, _ := os.ReadFile(secret)
				if string(b) != "TOP-SECRET-HOST-CONTENT\n" || !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
					t.Fatal("the host file changed")
				}
				if bytes.Contains(evb, []byte("TOP-SECRET")) || bytes.Contains(trb, []byte("TOP-SECRET")) {
					t.Fatal("the host file's content reached the record")
				}
				if bytes.Contains(evb, []byte(filepath.Dir(ws))) {
					t.Fatal("a host path reached the record")
				}
			}
		})
	}
}

// TestModelSessionsOnEnv fixes the calc task through each fake provider in a
// sandboxed environment; the model tries to finish before testing and is refused.
func TestModelSessionsOnEnv(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil, fixCalcScript...)
			e, _, _ := calcEnv(t)
			res, _, _, steps := recorded(t, Options{Policy: pol, Tools: e.Registry, Model: pol.Model, EnvID: e.ID})
			if res.StopReason != StopDone || res.Steps != 5 || srv.Remaining() != 0 {
				t.Fatalf("%+v, %d turns left", res, srv.Remaining())
			}
			if c := steps[1].Result.Error; c == nil || c.Code != tool.EPRECONDITION {
				t.Fatalf("the early finish was not refused: %+v", steps[1].Result)
			}
			var tr struct {
				Passed bool `json:"passed"`
			}
			json.Unmarshal(steps[3].Result.Data, &tr)
			if steps[3].Decision.Tool != "test.run" || !tr.Passed || !steps[4].Done {
				t.Fatalf("steps 4-5: %+v %+v", steps[3], steps[4])
			}
			diff, _ := e.Diff(context.Background())
			if !bytes.Contains(diff, []byte("+    return a + b\n")) {
				t.Fatalf("diff:\n%s", diff)
			}
			for i, r := range srv.Received() {
				if len(r.Violations) > 0 {
					t.Fatalf("request %d: %v", i+1, r.Violations)
				}
			}
		})
	}
}

// TestKeyNeverLeaks plants an API key in the coordinator's environment and
// configuration, has the model look at the sandbox's environment and make the
// key appear in a tool's arguments and output, and then searches every event,
// trace line, the diff and the result for it.
func TestKeyNeverLeaks(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil,
				modeltest.Turn{Calls: []modeltest.Call{{Name: "exec_run", Args: `{"command":"env; cat /proc/self/environ | tr '\\0' '\\n'"}`}}},
				modeltest.Turn{Calls: []modeltest.Call{{Name: "exec_run", Args: mustJSON(map[string]string{"command": "echo " + testKey})}}},
				modeltest.Turn{Text: "done"})
			e, _, _ := calcEnv(t)
			res, evb, trb, steps := recorded(t, Options{Policy: pol, Tools: e.Registry}, testKey)
			if res.StopReason != StopPolicy || len(srv.Received()) != 3 {
				t.Fatalf("%+v", res)
			}
			if h := srv.Received()[0].Header; h.Get("Authorization") != "Bearer "+testKey && h.Get("X-Api-Key") != testKey {
				t.Fatal("the key was not sent to the provider: the test would prove nothing")
			}
			// The sandbox never had it.
			if strings.Contains(steps[0].Result.Text, testKey) || strings.Contains(steps[0].Result.Text, "[redacted]") {
				t.Fatalf("the sandbox's environment holds the key:\n%s", steps[0].Result.Text)
			}
			if !strings.Contains(steps[0].Result.Text, "PATH=") {
				t.Fatalf("env printed nothing: %q", steps[0].Result.Text)
			}
			// What the model itself leaked is scrubbed from the record.
			if !strings.Contains(string(trb), "[redacted]") {
				t.Fatal("the echoed key was not in the record at all: the test would prove nothing")
			}
			diff, _ := e.Diff(context.Background())
			resJSON, _ := json.Marshal(res)
			for name, b := range map[string][]byte{"events": evb, "trace": trb, "diff": diff, "result": resJSON} {
				if bytes.Contains(b, []byte(testKey)) {
					t.Errorf("the key is in the %s", name)
				}
			}
		})
	}
}

// addedLines counts the lines a diff adds.
func addedLines(diff []byte) int {
	n := 0
	for _, l := range strings.Split(string(diff), "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			n++
		}
	}
	return n
}
