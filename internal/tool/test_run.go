package tool

import (
	"context"
	"encoding/json"
	"strings"
)

type testArgs struct{}

type testOut struct {
	Passed bool `json:"passed"`
	execOut
	// Summary is the last lines of the output ("Ran 2 tests … OK", "FAILED (failures=1)").
	Summary string `json:"summary"`
}

func (w *Workspace) testRun() Spec {
	return Spec{
		Describe: w.describeTest,
		Name:     "test.run",
		Description: "Run the task's tests (a command fixed by the operator) in the sandbox. passed is true when they exit 0 " +
			"within their time limit. task.finish requires a passing run after the last change to the workspace.",
		InputSchema: SchemaFor[testArgs](), OutputSchema: SchemaFor[testOut](),
		Effect: EffectExec, Idempotent: false, Scope: ScopeTest,
		Precondition: func(context.Context, json.RawMessage) error {
			if len(w.o.TestCommand) == 0 {
				return Errorf(EPRECONDITION, false, ActStop, "no test command is configured for this session")
			}
			return nil
		},
		Handler: w.test,
	}
}

func (w *Workspace) test(ctx context.Context, _ json.RawMessage) (Result, error) {
	cmd := strings.Join(w.o.TestCommand, " ")
	r, err := w.run(ctx, w.o.TestCommand, "", nil, w.o.TestTimeout)
	// A test run does not count as a write, but what it leaves behind (caches,
	// reports) is part of the version the run is recorded against.
	w.refresh(ctx)
	if err != nil {
		return Result{}, err
	}
	eo, text, refs, cut := w.describeRun(r, cmd)
	passed := r.ExitCode == 0 && !r.TimedOut && r.Signal == nil && r.Limit == "" && r.Error == ""
	w.mu.Lock()
	w.lastTest = &TestRecord{Passed: passed, ExitCode: r.ExitCode, Version: w.version}
	w.mu.Unlock()
	out := testOut{Passed: passed, execOut: eo, Summary: summary(r.Stdout, r.Stderr)}
	return Result{Data: out, Text: text, Refs: refs, Source: "test.run: " + cmd, Truncated: cut}, nil
}

// summary is the last three non-empty lines of stderr, else of stdout.
func summary(stdout, stderr string) string {
	pick := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			if strings.TrimSpace(l) != "" {
				out = append(out, l)
			}
		}
		return out[max(0, len(out)-3):]
	}
	l := pick(stderr)
	if len(l) == 0 {
		l = pick(stdout)
	}
	s := strings.Join(l, "\n")
	if len(s) > 600 {
		s = s[len(s)-600:]
	}
	return s
}
