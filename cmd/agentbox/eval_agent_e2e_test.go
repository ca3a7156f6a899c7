package main

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/testenv"
)

// sampleAgent is the Python client's sample agent, relative to the test's (and
// so eval's) working directory, as in the README.
const sampleAgent = "../../clients/python/examples/agent.py"

// TestEvalAgentCmd is the README's bring-your-own-agent path: eval --agent-cmd
// with the sample Python agent resolves calc; its output is in the attempt's
// directory; run.json holds no --agent-env value; resuming with another agent is
// refused, naming the flag.
func TestEvalAgentCmd(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Require(t, false, "no /usr/bin/python3 for the sample agent")
	}
	out := filepath.Join(t.TempDir(), "results")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	args := []string{"eval", "--tasks", "calc", "--out", out, "--progress", "lines",
		"--agent-env", "SAMPLE_SECRET=sk-planted-value", "--agent-cmd", "/usr/bin/python3 " + sampleAgent}
	stdout, stderr, status := run(t, env, args...)
	if status != 0 || !strings.Contains(stdout, "resolved 1/1") {
		t.Fatalf("eval --agent-cmd: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	r, err := report.Load(out)
	if err != nil || r.Policy != "external:/usr/bin/python3 "+sampleAgent || r.Attempts[0].Outcome != grade.Resolved {
		t.Fatalf("report: %+v, %v", r, err)
	}
	b, err := os.ReadFile(filepath.Join(out, r.Attempts[0].Dir, "agent.stdout"))
	if err != nil || !strings.Contains(string(b), "public tests after: exit 0") {
		t.Errorf("agent.stdout: %q, %v", b, err)
	}
	// run.json records the variables' names, never a value given on the command line.
	if b, err := os.ReadFile(filepath.Join(out, "run.json")); err != nil || strings.Contains(string(b), "sk-planted") ||
		!strings.Contains(string(b), `"agent-env": "SAMPLE_SECRET"`) {
		t.Errorf("run.json: %v\n%s", err, b)
	}
	args[len(args)-1] = "/usr/bin/python3 other.py"
	_, stderr, status = run(t, env, append(args, "--resume")...)
	if status != 125 || !strings.Contains(stderr, "--agent-cmd was") {
		t.Errorf("resume with another agent: status %d, stderr %q", status, stderr)
	}
}

// TestAgentEnvHoldsNoKey: the coordinator's model key reaches an external agent
// only when --agent-env names it.
func TestAgentEnvHoldsNoKey(t *testing.T) {
	ours := map[string]string{"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-planted", "AGENTBOX_TOKEN": "tok"}
	lookup := func(k string) (string, bool) { v, ok := ours[k]; return v, ok }
	got, err := externalEnv(nil, lookup)
	if err != nil || !slices.Equal(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("default environment %q, %v", got, err)
	}
	got, err = externalEnv([]string{"OPENAI_API_KEY", "MODEL=m"}, lookup)
	if err != nil || !slices.Equal(got, []string{"PATH=/bin", "HOME=/h", "OPENAI_API_KEY=sk-planted", "MODEL=m"}) {
		t.Errorf("with --agent-env: %q, %v", got, err)
	}
	if _, err := externalEnv([]string{"=x"}, lookup); err == nil {
		t.Error("--agent-env =x accepted")
	}
}

// TestEvalModelPreflight: a model that refuses the key, or that nothing answers
// for, fails eval before any environment starts or any result is written, with
// exit status 125 and a message that says what to check.
func TestEvalModelPreflight(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Turn{Status: 401})
	out := filepath.Join(t.TempDir(), "results")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-wrong"}
	_, stderr, status := run(t, env, "eval", "--tasks", "calc", "--policy", "openai", "--model", "m-test",
		"--base-url", srv.URL, "--out", out)
	if status != 125 || !strings.Contains(stderr, "cannot be reached") || !strings.Contains(stderr, "API key") {
		t.Fatalf("eval with a refused key: status %d, stderr %q", status, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the results directory was made: %v", err)
	}
	if n := len(srv.Received()); n != 1 {
		t.Errorf("%d model requests, want the preflight's 1", n)
	}
	// No route: a port nothing listens on (the retries give up after a few seconds).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	_, stderr, status = run(t, env, "eval", "--tasks", "calc", "--policy", "openai", "--model", "m-test",
		"--base-url", dead, "--out", out)
	if status != 125 || !strings.Contains(stderr, "cannot be reached") || !strings.Contains(stderr, "connection refused") {
		t.Fatalf("eval with no route to the model: status %d, stderr %q", status, stderr)
	}
}

// TestEvalModelErrorMidRun: a model that fails during an attempt (the key is
// refused after the preflight) gives the attempt the model_error outcome, not
// unresolved, and the summary counts it.
func TestEvalModelErrorMidRun(t *testing.T) {
	testenv.RequireRoot(t)
	srv := modeltest.NewOpenAI(t,
		modeltest.Turn{Text: "OK"},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}},
		modeltest.Turn{Status: 401},
	)
	out := filepath.Join(t.TempDir(), "results")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-revoked"}
	stdout, stderr, status := run(t, env, "eval", "--tasks", "calc", "--policy", "openai", "--model", "m-test",
		"--base-url", srv.URL, "--out", out, "--progress", "lines")
	r, err := report.Load(out)
	if err != nil || len(r.Attempts) != 1 {
		t.Fatalf("report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if a := r.Attempts[0]; a.Outcome != grade.ModelError || a.StopReason != "model_error" || r.Summary.ModelErrors != 1 || r.Summary.Unresolved != 0 {
		t.Fatalf("attempt %s (stop %s), summary %+v; status %d\nstdout:\n%s", a.Outcome, a.StopReason, r.Summary, status, stdout)
	}
	if !strings.Contains(stdout, "model_error 1") {
		t.Errorf("the printed summary does not count it:\n%s", stdout)
	}
}
