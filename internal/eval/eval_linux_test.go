package eval

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/task"
)

func setup(t *testing.T) (*env.Manager, []*task.Task) {
	t.Helper()
	m := envtest.New(t)
	all, err := task.Builtin(filepath.Join(t.TempDir(), "suite"))
	if err != nil {
		t.Fatal(err)
	}
	var py []*task.Task
	for _, tk := range all {
		if tk.ID == "calc" || tk.ID == "C01" {
			py = append(py, tk)
		}
	}
	return m, py
}

func call(tool string, args any) agent.Decision {
	b, _ := json.Marshal(args)
	return agent.Decision{Tool: tool, Args: b}
}

// TestAgentsClaimDecidesNothing: a policy that tries to finish without changing
// anything (refused by task.finish: no passing test run) is unresolved; one that
// "fixes" calc by emptying its public test, sees test.run pass and finishes (stop
// reason done) is tampered all the same; a policy that cannot be built is an
// attempt error. Attempts and tasks are all recorded, and the summary counts them.
func TestAgentsClaimDecidesNothing(t *testing.T) {
	m, tasks := setup(t)
	finish := call("task.finish", map[string]string{"summary": "all fixed, tests pass"})
	policies := map[string]PolicyFunc{
		"claim": func(*task.Task) (agent.Policy, []string, error) {
			return &agent.Sequence{Decisions: []agent.Decision{finish}}, nil, nil
		},
		"tamper": func(tk *task.Task) (agent.Policy, []string, error) {
			if tk.ID != "calc" {
				return nil, nil, errors.New("no tamper script for " + tk.ID)
			}
			return &agent.Sequence{StopOnError: true, Decisions: []agent.Decision{
				call("fs.write", map[string]string{"path": "tests/test_calc.py", "content": "import unittest\n"}),
				call("test.run", map[string]string{}),
				finish,
			}}, nil, nil
		},
	}
	for name, pol := range policies {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			r, err := Run(t.Context(), Options{Service: m, Owner: env.Owner{Tenant: "t"}, Tasks: tasks, Suite: "test",
				PolicyName: name, Policy: pol, Attempts: 2, Parallel: 2, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Attempts) != 4 || r.Summary.Attempts != 4 || r.Summary.Tasks != 2 || r.Summary.Resolved != 0 {
				t.Fatalf("summary %+v with %d attempts", r.Summary, len(r.Attempts))
			}
			for _, a := range r.Attempts {
				want := "unresolved"
				if name == "tamper" {
					want = map[string]string{"calc": "tampered", "C01": "infra_error"}[a.Task]
				}
				if string(a.Outcome) != want {
					t.Errorf("%s: outcome %s (%s), want %s", a.Dir, a.Outcome, a.Error, want)
				}
				if want == "tampered" && strings.Join(a.Verdict.TamperPaths, ",") != "tests/test_calc.py" {
					t.Errorf("%s: tamper paths %q", a.Dir, a.Verdict.TamperPaths)
				}
				stop := map[string]string{"claim": "policy_stop", "tamper": "done"}[name]
				if want != "infra_error" && a.StopReason != stop {
					t.Errorf("%s: stop reason %s, want %s", a.Dir, a.StopReason, stop)
				}
			}
			back, err := report.Load(out)
			if err != nil || back.Summary != r.Summary {
				t.Fatalf("report.json: %+v, %v; want %+v", back.Summary, err, r.Summary)
			}
		})
	}
}

// TestResumeRules: a used results directory is refused without Resume, and with
// Resume under other flags; an empty one that holds no run is refused too.
func TestResumeRules(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[:1]
	pol := func(*task.Task) (agent.Policy, []string, error) {
		return &agent.Sequence{Decisions: []agent.Decision{call("task.finish", map[string]string{})}}, nil, nil
	}
	out := filepath.Join(t.TempDir(), "out")
	o := Options{Service: m, Tasks: tasks, Suite: "s", PolicyName: "p", Policy: pol, Out: out}
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("second run into the same directory: %v", err)
	}
	o.Resume, o.PolicyName = true, "other"
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "policy") {
		t.Errorf("resume with another policy: %v", err)
	}
	o.PolicyName = "p"
	if r, err := Run(t.Context(), o); err != nil || len(r.Attempts) != 1 || r.Attempts[0].Outcome != grade.Unresolved {
		t.Errorf("resume of a finished run: %v", err)
	}
	junk := t.TempDir()
	os.WriteFile(filepath.Join(junk, "notes.txt"), []byte("mine"), 0o644)
	o.Out, o.Resume = junk, false
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("run into a directory holding other files: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(junk, "notes.txt")); string(b) != "mine" {
		t.Errorf("the other files were touched")
	}
	// An attempt the harness failed is run again on resume; one that ran is not.
	o.Out, o.Resume = filepath.Join(t.TempDir(), "retry"), false
	o.Policy = func(*task.Task) (agent.Policy, []string, error) { return nil, nil, errors.New("no model today") }
	if r, err := Run(t.Context(), o); err != nil || r.Attempts[0].Outcome != grade.InfraError {
		t.Fatalf("failing policy: %v", err)
	}
	o.Policy, o.Resume = pol, true
	if r, err := Run(t.Context(), o); err != nil || r.Attempts[0].Outcome != grade.Unresolved || r.Attempts[0].Error != "" {
		t.Fatalf("resume after an attempt error: %v %+v", err, r.Attempts)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	o.Out, o.Resume = filepath.Join(t.TempDir(), "cancelled"), false
	r, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) || r == nil || !r.Interrupted || len(r.Attempts) != 0 {
		t.Errorf("cancelled run: %v, %+v", err, r)
	}
}

// TestResumeRefusesOtherSettings guards against the resume that silently dropped
// finished attempts: a run made with Attempts 2 resumed with the default 1 is
// refused, as is one whose flags differ (the error names each), and resuming a
// directory that holds no run is an error, not a new run.
func TestResumeRefusesOtherSettings(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[:1]
	pol := func(*task.Task) (agent.Policy, []string, error) {
		return &agent.Sequence{Decisions: []agent.Decision{call("task.finish", map[string]string{})}}, nil, nil
	}
	out := filepath.Join(t.TempDir(), "out")
	o := Options{Service: m, Tasks: tasks, Suite: "s", PolicyName: "p", Policy: pol, Out: out, Attempts: 2,
		Flags: map[string]string{"timeout": "0s", "reruns": "0", "attempts": "2"}}
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want []string
	}{
		{"attempts", func(o *Options) {
			o.Attempts = 0
			o.Flags = map[string]string{"timeout": "0s", "reruns": "0", "attempts": "1"}
		},
			[]string{`attempts was "2", now "1"`}},
		{"flags", func(o *Options) {
			o.Flags = map[string]string{"timeout": "1m0s", "reruns": "0", "attempts": "2", "new": "x"}
		},
			[]string{`--timeout was "0s", now "1m0s"`, `--new was "", now "x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			o.Resume = true
			tc.edit(&o)
			_, err := Run(t.Context(), o)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("resume with other %s: %v; want it to name %s", tc.name, err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "reruns") {
				t.Errorf("names a flag that did not change: %v", err)
			}
		})
	}
	o.Resume = true
	if r, err := Run(t.Context(), o); err != nil || len(r.Attempts) != 2 {
		t.Fatalf("resume with the same settings: %v", err)
	}
	o.Out = filepath.Join(t.TempDir(), "never")
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "holds no run") {
		t.Errorf("resume of a directory that does not exist: %v", err)
	}
	if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("resuming a missing directory created it: %v", err)
	}
}

// TestUnansweredAskGoesOn: an attempt's session has the permission layer, and
// nobody is there to ask, so the built-in policy's ask about `rm -rf
// __pycache__` is refused (EPERM to the model, recorded as a denial) and the
// attempt goes on to finish, instead of ending with policy_stop. The command did
// not run: the directory is still in the environment when test.run lists it.
func TestUnansweredAskGoesOn(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[:1]
	pol := func(*task.Task) (agent.Policy, []string, error) {
		return &agent.Sequence{Decisions: []agent.Decision{
			call("exec.run", map[string]string{"command": "mkdir -p __pycache__ && rm -rf __pycache__"}),
			call("fs.write", map[string]string{"path": "tests/test_calc.py", "content": "import unittest\n"}),
			call("test.run", map[string]string{}),
			call("task.finish", map[string]string{"summary": "done"}),
		}}, nil, nil
	}
	out := filepath.Join(t.TempDir(), "out")
	r, err := Run(t.Context(), Options{Service: m, Owner: env.Owner{Tenant: "t"}, Tasks: tasks, Suite: "test",
		PolicyName: "p", Policy: pol, Out: out, Permissions: &agent.PermissionConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Attempts[0]
	if a.StopReason != "done" || a.ToolCalls != 4 {
		t.Fatalf("stop reason %s after %d tool calls (%s); want done after 4", a.StopReason, a.ToolCalls, a.Error)
	}
	evs, err := os.ReadFile(filepath.Join(out, a.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var denied, eperm bool
	for _, line := range strings.Split(string(evs), "\n") {
		denied = denied || strings.Contains(line, `"ApprovalResolved"`) && strings.Contains(line, `"deny"`)
		eperm = eperm || strings.Contains(line, `"ToolExecutionFinished"`) && strings.Contains(line, `"EPERM"`) &&
			strings.Contains(line, "rm -rf")
	}
	if !denied || !eperm {
		t.Fatalf("events: denial recorded %v, EPERM with the command to the model %v", denied, eperm)
	}
}
