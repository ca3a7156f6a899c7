package journal

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentbox/agentbox/internal/trace"
)

// procModel is what the fold must make of one call's process events: the
// rules of ToolExecutionProgress and of verdicts taken from a process
// (trace.CapabilityProcess), said plainly.
type procModel struct {
	started, done bool
	process       string
	verdict       string // "", or the last verdict's capability:outcome
	fromProcess   bool   // the last verdict came from the process: its result follows
}

func (m *procModel) open() bool {
	return !m.done && (m.verdict == "" || m.fromProcess)
}

// TestFoldProcessProperty: any sequence of a call's start, process record,
// recovery verdicts (from its process or not, unknown, a person's) and result
// folds exactly when the rules allow it: a process is recorded once, after the
// start and before any verdict; a verdict from the process names the recorded
// one and leaves the call open for its result; a result comes at most once,
// never after a verdict that was not the process's. Whatever folds, a
// snapshot of any prefix and the tail fold to the same state.
func TestFoldProcessProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := &trace.Memory{}
		log := trace.NewLog(trace.LogOptions{Session: "s-proc", Sinks: []trace.Sink{mem}})
		log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-proc", Goal: "g"})
		log.Emit(trace.TurnStarted, 1, "", trace.TurnStart{})
		log.Emit(trace.ToolCallProposed, 1, "call_1", trace.Decision{Tool: "exec.run"})
		st, err := Fold(mem.Events())
		if err != nil {
			t.Fatal(err)
		}
		var m procModel
		// Mostly a call that started and recorded p1, so that what follows
		// it is drawn often; a stray kind or process now and then.
		kinds := []string{"still_running", "succeeded", "unknown", "not_run", "person", "finished"}
		var script []string
		if rapid.IntRange(0, 4).Draw(t, "started") > 0 {
			script = []string{"start", "progress"}
		}
		n := rapid.IntRange(1, 8).Draw(t, "events")
		for i := 0; i < n; i++ {
			if rapid.IntRange(0, 5).Draw(t, "stray") == 0 {
				script = append(script, rapid.SampledFrom([]string{"start", "progress"}).Draw(t, "kind"))
				continue
			}
			script = append(script, rapid.SampledFrom(kinds).Draw(t, "kind"))
		}
		for _, kind := range script {
			pid := "p1"
			if rapid.IntRange(0, 5).Draw(t, "other process") == 0 {
				pid = "p2"
			}
			var typ trace.Type
			var payload any
			legal := false
			switch kind {
			case "start":
				typ, payload, legal = trace.ToolExecutionStarted, trace.ToolStart{Tool: "exec.run", Effect: "exec"}, !m.started && m.open()
			case "progress":
				typ, payload = trace.ToolExecutionProgress, trace.ToolProgress{Env: "e1", Process: pid}
				legal = m.started && m.process == "" && m.verdict == "" && !m.done
			case "still_running", "succeeded":
				typ, payload = trace.RecoveryReconciled, trace.Reconcile{Capability: trace.CapabilityProcess, Process: pid, Outcome: kind, By: "recovery"}
				legal = !m.done && m.process == pid && (m.verdict == "" || m.fromProcess || m.verdict == "none:unknown")
			case "unknown", "not_run", "person":
				outcome, by := kind, "recovery"
				if kind == "person" {
					outcome, by = trace.OutcomeSucceeded, "person"
				}
				typ, payload = trace.RecoveryReconciled, trace.Reconcile{Capability: "none", Outcome: outcome, By: by}
				legal = !m.done && (m.verdict == "" || m.fromProcess || m.verdict == "none:unknown")
			case "finished":
				typ, payload, legal = trace.ToolExecutionFinished, trace.ToolFinish{}, m.open()
			}
			before := len(mem.Events())
			log.Emit(typ, 1, "call_1", payload)
			e := mem.Events()[before]
			err := st.Apply(e)
			if legal != (err == nil) {
				t.Fatalf("%s (%s) after %+v: folded %v, the rules say legal=%t", kind, pid, m, err, legal)
			}
			if err != nil {
				if !errors.Is(err, ErrInvariant) {
					t.Fatalf("%s: %v, want an invariant error", kind, err)
				}
				return // the log is broken from here: a store refuses the append
			}
			switch kind {
			case "start":
				m.started = true
			case "progress":
				m.process = pid
			case "still_running", "succeeded":
				m.verdict, m.fromProcess = "process:"+kind, true
			case "unknown", "not_run", "person":
				c := payload.(trace.Reconcile)
				m.verdict, m.fromProcess = c.Capability+":"+c.Outcome, false
			case "finished":
				m.done = true
			}
			c := st.Calls["call_1"]
			if c.Open() != m.open() || (c.Result != nil) != m.done || (m.process != "" && (c.Process == nil || c.Process.Process != m.process)) {
				t.Fatalf("after %s: the call %+v, the rules' %+v", kind, c, m)
			}
		}
		foldsFromAnySnapshot(t, mem.Events(), st)
	})
}
