package tool

import (
	"context"
	"encoding/json"
)

type finishArgs struct {
	Summary string `json:"summary,omitempty" jsonschema:"what was changed and why, in a few sentences"`
}

type finishOut struct {
	Finished bool   `json:"finished"`
	Summary  string `json:"summary,omitempty"`
}

func (w *Workspace) taskFinish() Spec {
	return Spec{
		Name: "task.finish",
		Description: "Declare the task done and end the session. Allowed only when test.run passed after the last change " +
			"to the workspace; otherwise it fails with EPRECONDITION and nothing ends.",
		InputSchema: SchemaFor[finishArgs](), OutputSchema: SchemaFor[finishOut](),
		Effect: EffectControl, Idempotent: true, Scope: ScopeFinish,
		Precondition: func(context.Context, json.RawMessage) error { return w.finishable() },
		Handler: func(_ context.Context, raw json.RawMessage) (Result, error) {
			var a finishArgs
			if err := decode(raw, &a); err != nil {
				return Result{}, err
			}
			w.mu.Lock()
			w.finished = true
			w.mu.Unlock()
			return Result{Data: finishOut{Finished: true, Summary: a.Summary}, Done: true}, nil
		},
	}
}

// finishable is task.finish's precondition: the tests ran after the last change to
// the workspace, and passed.
func (w *Workspace) finishable() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.lastTest
	switch {
	case t == nil:
		return Errorf(EPRECONDITION, false, ActRunTests, "the tests have not been run; call test.run first")
	case t.Version != w.version:
		return Errorf(EPRECONDITION, false, ActRunTests, "the workspace changed after the last test run; call test.run again")
	case !t.Passed:
		return Errorf(EPRECONDITION, false, ActRunTests, "the last test run failed (exit code %d); fix the code and run the tests again", t.ExitCode)
	}
	return nil
}
