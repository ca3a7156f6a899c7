package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// memCalc is the calc task on an in-memory workspace, behind the same tool names,
// schemas and preconditions as the built-in tools, for tests of the loop that do
// not need a sandbox. The built-in tools on a real environment are tested in
// builtin_env_test.go.
type memCalc struct {
	mu       sync.Mutex
	files    map[string]string
	version  int
	tested   *tool.TestRecord
	finished bool
	calls    map[string]int
}

const calcPy = `"""A tiny calculator."""


def add(a, b):
    """Return the sum of a and b."""
    return a - b


def sub(a, b):
    """Return a minus b."""
    return a - b
`

func newMemCalc(t testing.TB, scopes ...string) (*tool.Registry, *memCalc) {
	t.Helper()
	if scopes == nil {
		scopes = tool.BuiltinScopes
	}
	w := &memCalc{files: map[string]string{"calc.py": calcPy}, calls: map[string]int{}}
	r := tool.NewRegistry(tool.Options{Scopes: scopes})
	obj := func(props string, req ...string) json.RawMessage {
		b, _ := json.Marshal(req)
		if req == nil {
			b = []byte("[]")
		}
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s,"additionalProperties":false}`, props, b))
	}
	specs := []tool.Spec{
		{Name: "fs.read", Scope: tool.ScopeRead, Effect: tool.EffectRead, Idempotent: true,
			InputSchema: obj(`"path":{"type":"string"}`, "path"), Handler: w.read},
		{Name: "patch.apply", Scope: tool.ScopeWrite, Effect: tool.EffectWrite,
			InputSchema: obj(`"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}`, "path", "old", "new"), Handler: w.replace},
		{Name: "fs.write", Scope: tool.ScopeWrite, Effect: tool.EffectWrite,
			InputSchema: obj(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content"), Handler: w.write},
		{Name: "test.run", Scope: tool.ScopeTest, Effect: tool.EffectExec, InputSchema: obj(``), Handler: w.test},
		{Name: "task.finish", Scope: tool.ScopeFinish, Effect: tool.EffectControl, Idempotent: true,
			InputSchema:  obj(`"summary":{"type":"string"}`),
			Precondition: w.finishable, Handler: w.finish},
	}
	for _, s := range specs {
		if err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	r.SetWorld(w)
	return r, w
}

func (w *memCalc) count(name string) {
	w.mu.Lock()
	w.calls[name]++
	w.mu.Unlock()
}

func (w *memCalc) Snapshot() tool.Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := tool.Snapshot{Version: fmt.Sprintf("v%d", w.version), Writes: w.version, Finished: w.finished}
	if w.tested != nil {
		c := *w.tested
		s.Tests = &c
	}
	return s
}

func args[T any](raw json.RawMessage) T {
	var v T
	json.Unmarshal(raw, &v)
	return v
}

func (w *memCalc) read(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	w.count("fs.read")
	p := args[struct{ Path string }](raw).Path
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") {
		return tool.Result{}, tool.Errorf(tool.EPERM, false, tool.ActStop, "%s: path escapes the workspace", p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.files[p]
	if !ok {
		return tool.Result{}, tool.Errorf(tool.ENOENT, false, tool.ActListDir, "%s: no such file", p)
	}
	return tool.Result{Data: map[string]any{"path": p, "size": len(c)}, Text: c, Source: p}, nil
}

func (w *memCalc) replace(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	w.count("patch.apply")
	a := args[struct{ Path, Old, New string }](raw)
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.files[a.Path]
	switch n := strings.Count(c, a.Old); {
	case n == 0:
		return tool.Result{}, tool.Errorf(tool.ENOMATCH, false, tool.ActReread, "%s: old string not found", a.Path)
	case n > 1:
		return tool.Result{}, tool.Errorf(tool.EAMBIGUOUS, false, tool.ActReread, "%s: old string matches %d times", a.Path, n)
	}
	w.files[a.Path] = strings.Replace(c, a.Old, a.New, 1)
	w.version++
	return tool.Result{Data: map[string]any{"mode": "str_replace"}}, nil
}

func (w *memCalc) write(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	w.count("fs.write")
	a := args[struct{ Path, Content string }](raw)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.files[a.Path] != a.Content {
		w.version++
	}
	w.files[a.Path] = a.Content
	return tool.Result{Data: map[string]any{"bytes": len(a.Content)}}, nil
}

func (w *memCalc) test(context.Context, json.RawMessage) (tool.Result, error) {
	w.count("test.run")
	w.mu.Lock()
	defer w.mu.Unlock()
	passed := strings.Contains(w.files["calc.py"], "    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b")
	code := 1
	if passed {
		code = 0
	}
	w.tested = &tool.TestRecord{Passed: passed, ExitCode: code, Version: fmt.Sprintf("v%d", w.version)}
	return tool.Result{Data: map[string]any{"passed": passed, "exit_code": code}, Text: "Ran 2 tests"}, nil
}

func (w *memCalc) finishable(context.Context, json.RawMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch t := w.tested; {
	case t == nil:
		return tool.Errorf(tool.EPRECONDITION, false, tool.ActRunTests, "the tests have not been run; call test.run first")
	case t.Version != fmt.Sprintf("v%d", w.version):
		return tool.Errorf(tool.EPRECONDITION, false, tool.ActRunTests, "the workspace changed after the last test run")
	case !t.Passed:
		return tool.Errorf(tool.EPRECONDITION, false, tool.ActRunTests, "the last test run failed")
	}
	return nil
}

func (w *memCalc) finish(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	w.count("task.finish")
	w.mu.Lock()
	w.finished = true
	w.mu.Unlock()
	return tool.Result{Data: map[string]any{"finished": true, "summary": args[struct{ Summary string }](raw).Summary}, Done: true}, nil
}

// session runs a session with an in-memory event log and returns the result,
// the events and the projected steps.
func session(t testing.TB, o Options) (*Result, []trace.Event, []trace.Step) {
	t.Helper()
	mem := &trace.Memory{}
	proj := trace.NewProjector(nil)
	if o.Log == nil {
		o.Log = trace.NewLog(trace.LogOptions{Session: "s-test", Sinks: []trace.Sink{mem, proj},
			Clock: fixedClock()})
	}
	if o.Goal == "" {
		o.Goal = "Fix calc.add so that it returns a + b."
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Log.Err(); err != nil {
		t.Fatal(err)
	}
	return res, mem.Events(), proj.Steps()
}

// fixedClock advances one millisecond per reading, for deterministic traces.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}
