package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

func dec(name, args string) Decision { return Decision{Tool: name, Args: json.RawMessage(args)} }

// TestScriptedModesInMemory runs seed 002's three modes on the in-memory calc
// task: the loop's side of the acceptance (the sandboxed version is in
// acceptance_env_test.go).
func TestScriptedModesInMemory(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		maxSteps  int
		stop      StopReason
		steps     int
		toolCalls int
		tools     []string
	}{
		{ModeGood, 0, StopDone, 4, 4, []string{"fs.read", "patch.apply", "test.run", "task.finish"}},
		{ModeLoop, 4, StopNoProgress, 3, 3, []string{"fs.read", "fs.read", "fs.read"}},
		{ModeEscape, 0, StopPolicy, 2, 1, []string{"fs.read"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			reg, w := newMemCalc(t)
			res, _, steps := session(t, Options{Policy: &Scripted{Mode: tc.mode}, Tools: reg, Limits: Limits{MaxSteps: tc.maxSteps}})
			if res.StopReason != tc.stop || res.Steps != tc.steps || res.ToolCalls != tc.toolCalls {
				t.Fatalf("stop %s (%s) steps %d calls %d, want %s %d %d", res.StopReason, res.Detail, res.Steps, res.ToolCalls, tc.stop, tc.steps, tc.toolCalls)
			}
			var got []string
			for _, s := range steps {
				if s.Decision != nil && !s.Decision.Stop {
					got = append(got, s.Decision.Tool)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.tools, ",") {
				t.Fatalf("tools %v, want %v", got, tc.tools)
			}
			if len(steps) != tc.steps || steps[len(steps)-1].End == nil || steps[len(steps)-1].End.StopReason != string(tc.stop) {
				t.Fatalf("%d trace lines, last %+v", len(steps), steps[len(steps)-1].End)
			}
			switch tc.mode {
			case ModeGood:
				if !strings.Contains(w.files["calc.py"], "return a + b") || strings.Count(w.files["calc.py"], "return a - b") != 1 || !w.finished {
					t.Fatalf("calc.py:\n%s", w.files["calc.py"])
				}
			case ModeEscape:
				e := steps[0].Result.Error
				if e == nil || e.Code != tool.EPERM || e.Retryable || e.SuggestedAction != tool.ActStop {
					t.Fatalf("step 1: %+v", steps[0].Result)
				}
			}
		})
	}
}

// TestScriptedReferenceRefusals: the reference mode stops, saying why, when it has
// no patch, and when its patch does not apply (the in-memory patch.apply takes no
// diff, so the call is refused as invalid).
func TestScriptedReferenceRefusals(t *testing.T) {
	for _, tc := range []struct {
		patch, why string
		calls      int
	}{
		{"", "no reference patch", 0},
		{"--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x\n+y\n", "the reference patch did not apply", 2},
	} {
		reg, _ := newMemCalc(t)
		res, _, _ := session(t, Options{Policy: &Scripted{Mode: ModeReference, Patch: tc.patch}, Tools: reg})
		if res.StopReason != StopPolicy || !strings.Contains(res.Detail, tc.why) || res.ToolCalls != tc.calls {
			t.Errorf("patch %q: stop %s (%s) after %d calls, want policy_stop (%s) after %d", tc.patch, res.StopReason, res.Detail, res.ToolCalls, tc.why, tc.calls)
		}
	}
}

// progressing writes a new file content every step, so it never repeats itself.
type progressing struct{ n int }

func (p *progressing) Name() string { return "progressing" }
func (p *progressing) Next(context.Context, *State) (Decision, error) {
	p.n++
	return dec("fs.write", fmt.Sprintf(`{"path":"notes.txt","content":"note %d"}`, p.n)), nil
}

func TestStepAndToolBudgets(t *testing.T) {
	t.Run("max_steps", func(t *testing.T) {
		reg, w := newMemCalc(t)
		res, _, steps := session(t, Options{Policy: &progressing{}, Tools: reg, Limits: Limits{MaxSteps: 5}})
		if res.StopReason != StopMaxSteps || res.Steps != 5 || w.calls["fs.write"] != 5 || len(steps) != 5 {
			t.Fatalf("%+v, %d writes, %d lines", res, w.calls["fs.write"], len(steps))
		}
		// As in seed 002, budget_before is taken once the step itself is paid
		// for and before its tool call is.
		for i, s := range steps {
			if s.BudgetBefore.StepsLeft != 5-(i+1) || s.BudgetBefore.ToolsLeft != DefaultMaxToolCalls-i {
				t.Errorf("step %d budget_before %+v", s.Step, s.BudgetBefore)
			}
		}
	})
	t.Run("max_tool_calls", func(t *testing.T) {
		reg, w := newMemCalc(t)
		res, _, steps := session(t, Options{Policy: &progressing{}, Tools: reg, Limits: Limits{MaxSteps: 10, MaxToolCalls: 2}})
		if res.StopReason != StopMaxToolCalls || res.ToolCalls != 2 || w.calls["fs.write"] != 2 {
			t.Fatalf("%+v, %d writes", res, w.calls["fs.write"])
		}
		last := steps[len(steps)-1]
		if last.Step != 3 || last.Result.Error == nil || last.Result.Error.Code != tool.EBUDGET {
			t.Fatalf("step 3 should record the refused call: %+v", last)
		}
	})
}

// TestNoProgress covers the three detectors and that progress resets them.
func TestNoProgress(t *testing.T) {
	read := dec("fs.read", `{"path":"calc.py"}`)
	for _, tc := range []struct {
		name   string
		seq    []Decision
		window int
		stop   StopReason
		at     int
		why    string
	}{
		{"three identical", []Decision{read, read, read, read}, 0, StopNoProgress, 3, "same action"},
		{"argument order does not matter", []Decision{dec("fs.read", `{"path":"calc.py"}`), dec("fs.read", `{ "path" : "calc.py" }`), read}, 0, StopNoProgress, 3, "same action"},
		{"window of five", []Decision{read, read, read, read, read, read}, 5, StopNoProgress, 5, "same action"},
		{"A-B-A-B", []Decision{read, dec("fs.read", `{"path":"missing.py"}`), read, dec("fs.read", `{"path":"missing.py"}`), read}, 0, StopNoProgress, 4, "A-B-A-B"},
		{"same error, different arguments", []Decision{
			dec("task.finish", `{"summary":"a"}`), dec("task.finish", `{"summary":"b"}`), dec("task.finish", `{"summary":"c"}`), read},
			0, StopNoProgress, 3, "same error"},
		{"writes are progress", []Decision{
			read, dec("fs.write", `{"path":"x","content":"1"}`), read, dec("fs.write", `{"path":"x","content":"2"}`), read, dec("fs.write", `{"path":"x","content":"3"}`), read},
			0, StopPolicy, 8, ""},
		{"a rewrite of the same content is not", []Decision{
			dec("fs.write", `{"path":"x","content":"1"}`), dec("fs.write", `{"path":"x","content":"1"}`), dec("fs.write", `{"path":"x","content":"1"}`)},
			0, StopNoProgress, 3, "same action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, _ := newMemCalc(t)
			res, _, _ := session(t, Options{Policy: &Sequence{Decisions: tc.seq}, Tools: reg, Limits: Limits{NoProgressWindow: tc.window}})
			if res.StopReason != tc.stop || res.Steps != tc.at || !strings.Contains(res.Detail, tc.why) {
				t.Fatalf("stop %s at %d (%s), want %s at %d", res.StopReason, res.Steps, res.Detail, tc.stop, tc.at)
			}
		})
	}
}

// observer remembers what it was shown before each decision.
type observer struct {
	seq  []Decision
	seen [][]Turn
}

func (o *observer) Name() string { return "observer" }
func (o *observer) Next(_ context.Context, s *State) (Decision, error) {
	o.seen = append(o.seen, append([]Turn(nil), s.History...))
	if len(o.seen) > len(o.seq) {
		return Decision{Stop: true, Reason: "done looking"}, nil
	}
	return o.seq[len(o.seen)-1], nil
}

// TestFailuresAreObservations checks that every result, failures included,
// reaches the policy with its code, retryability and suggested action, and that a
// tool that panics or is refused does not stop the loop.
func TestFailuresAreObservations(t *testing.T) {
	reg, w := newMemCalc(t, tool.ScopeRead, tool.ScopeFinish)
	if err := reg.Register(tool.Spec{Name: "boom", Scope: tool.ScopeRead, Effect: tool.EffectRead,
		Handler: func(context.Context, json.RawMessage) (tool.Result, error) { panic("boom") }}); err != nil {
		t.Fatal(err)
	}
	o := &observer{seq: []Decision{
		dec("fs.read", `{"path":"../secret.txt"}`),
		dec("nonexistent.tool", `{}`),
		dec("fs.read", `{"path":42}`),
		dec("fs.write", `{"path":"x","content":"y"}`), // scope not granted
		dec("boom", `{}`),
		{Tool: "fs.read", ArgsError: "tool arguments are not valid JSON at byte 9"},
		dec("task.finish", `{}`),
		dec("fs.read", `{"path":"calc.py"}`),
	}}
	res, _, _ := session(t, Options{Policy: o, Tools: reg})
	if res.StopReason != StopPolicy || res.Steps != 9 {
		t.Fatalf("%+v", res)
	}
	want := []struct {
		code  tool.Code
		retry bool
		act   string
	}{
		{tool.EPERM, false, tool.ActStop}, {tool.ENOTOOL, false, tool.ActUseTool}, {tool.EINVAL, false, tool.ActFixArgs},
		{tool.EPERM, false, tool.ActStop}, {tool.EINTERNAL, false, tool.ActStop}, {tool.EINVAL, false, tool.ActFixArgs},
		{tool.EPRECONDITION, false, tool.ActRunTests},
	}
	final := o.seen[len(o.seen)-1]
	if len(final) != 8 {
		t.Fatalf("history has %d turns", len(final))
	}
	for i, wnt := range want {
		e := final[i].Result.Error
		if e == nil || e.Code != wnt.code || e.Retryable != wnt.retry || e.SuggestedAction != wnt.act {
			t.Errorf("turn %d: %+v, want %+v", i+1, final[i].Result.Error, wnt)
		}
		if len(o.seen[i+1]) != i+1 {
			t.Errorf("decision %d saw %d turns", i+2, len(o.seen[i+1]))
		}
	}
	if !final[7].Result.OK {
		t.Errorf("the loop did not recover: %+v", final[7].Result)
	}
	if w.calls["fs.read"] != 2 || res.ToolCalls != 7 {
		t.Errorf("fs.read ran %d times (the malformed call must not run), %d tool calls spent", w.calls["fs.read"], res.ToolCalls)
	}
}

func TestWallTimeAndCancel(t *testing.T) {
	block := func(reg *tool.Registry, started chan struct{}) {
		reg.Register(tool.Spec{Name: "sleep", Scope: tool.ScopeRead, Effect: tool.EffectRead,
			Handler: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
				if started != nil {
					close(started)
				}
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			}})
	}
	t.Run("wall time", func(t *testing.T) {
		reg, _ := newMemCalc(t)
		block(reg, nil)
		// The tool blocks until it is interrupted: only the wall budget ends it.
		res, _, steps := session(t, Options{Policy: &Sequence{Decisions: []Decision{dec("sleep", `{}`)}}, Tools: reg,
			Limits: Limits{MaxWall: 100 * time.Millisecond}})
		if res.StopReason != StopBudgetExhausted || !strings.Contains(res.Detail, "wall") {
			t.Fatalf("%+v", res)
		}
		if c := steps[0].Result.Error.Code; c != tool.ETIMEDOUT {
			t.Errorf("the interrupted call: %s", c)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		reg, _ := newMemCalc(t)
		started := make(chan struct{})
		block(reg, started)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		res, err := Run(ctx, Options{Goal: "g", Policy: &Sequence{Decisions: []Decision{dec("sleep", `{}`)}}, Tools: reg})
		if err != nil || res.StopReason != StopCancelled {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

// TestEvents checks the event log: seq increases by one from 1, ids are
// session/seq, every step opens and closes, and tool execution is bracketed.
func TestEvents(t *testing.T) {
	reg, _ := newMemCalc(t)
	_, evs, steps := session(t, Options{Policy: &Scripted{Mode: ModeGood}, Tools: reg})
	var types []string
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.ID != fmt.Sprintf("s-test/%d", i+1) || e.Session != "s-test" {
			t.Fatalf("event %d: seq %d id %s", i, e.Seq, e.ID)
		}
		types = append(types, string(e.Type))
	}
	want := "SessionCreated" + strings.Repeat(",TurnStarted,ToolCallProposed,ToolExecutionStarted,ToolExecutionFinished,TurnCompleted", 4) + ",SessionEnded"
	if got := strings.Join(types, ","); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	again, err := trace.Project(evs)
	if err != nil || len(again) != len(steps) {
		t.Fatalf("projection of the log: %d steps, %v", len(again), err)
	}
	if d, diff := trace.Diverge(again, steps); diff {
		t.Fatalf("the projector and Project disagree: %s", d)
	}
	if steps[0].Session == nil || steps[0].Session.Policy != "scripted:good" || len(steps[0].Session.Tools) == 0 {
		t.Fatalf("first line: %+v", steps[0].Session)
	}
}

// TestNetworkAccessEvents: with Options.Network, each connection of the
// environment is recorded once, as a NetworkAccess event of the tool call during
// which it ended, right after that call's ToolExecutionFinished; a failure to read
// the log is recorded too. The projection of the log ignores them.
func TestNetworkAccessEvents(t *testing.T) {
	reg, _ := newMemCalc(t)
	calls := 0
	network := func(_ context.Context, after uint64) ([]egress.Event, error) {
		calls++
		// Two connections end during the first call, none during the second, one
		// during the third; the fourth read fails.
		all := []egress.Event{{Seq: 1, Host: "a.test", Decision: egress.Allowed}, {Seq: 2, Host: "b.test", Decision: egress.Denied, Reason: egress.ReasonNotAllowed}}
		switch calls {
		case 1, 2:
		case 3:
			all = append(all, egress.Event{Seq: 3, Host: "c.test", Decision: egress.Allowed})
		default:
			return nil, errors.New("log unavailable")
		}
		var out []egress.Event
		for _, e := range all {
			if e.Seq > after {
				out = append(out, e)
			}
		}
		return out, nil
	}
	_, evs, steps := session(t, Options{Policy: &Scripted{Mode: ModeGood}, Tools: reg, Network: network})
	var got []string
	for i, e := range evs {
		if e.Type != trace.NetworkAccess {
			continue
		}
		if prev := evs[i-1]; prev.Type != trace.ToolExecutionFinished && prev.Type != trace.NetworkAccess || prev.CallID != e.CallID || e.CallID == "" {
			t.Errorf("NetworkAccess %s after %s of call %q", e.Data, prev.Type, prev.CallID)
		}
		var ne struct {
			Host, Decision, Reason, Error string
		}
		json.Unmarshal(e.Data, &ne)
		got = append(got, fmt.Sprintf("%d:%s%s%s%s", e.Step, ne.Host, ne.Decision, ne.Reason, ne.Error))
	}
	if want := "1:a.testallow 1:b.testdenynot_allowed 3:c.testallow 4:log unavailable"; strings.Join(got, " ") != want {
		t.Errorf("NetworkAccess events %q, want %q", got, want)
	}
	if again, err := trace.Project(evs); err != nil || len(again) != len(steps) {
		t.Errorf("projection: %d steps, %v", len(again), err)
	}
}
