package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

func mountDelegate(t *testing.T) func(*tool.Registry) {
	return func(r *tool.Registry) {
		if err := r.Register(DelegateTool(Delegation{Policy: func(string) (Policy, error) { return &Scripted{Mode: ModeErrand}, nil }})); err != nil {
			t.Fatal(err)
		}
	}
}

// subagentEvents returns the subagent's own events of a given type.
func subagentEvents(evs []trace.Event, typ trace.Type) []trace.Event {
	var out []trace.Event
	for _, e := range ofType(evs, trace.SubagentEvent) {
		var r trace.SubagentRecord
		json.Unmarshal(e.Data, &r)
		if r.Event.Type == typ {
			out = append(out, r.Event)
		}
	}
	return out
}

// TestExfilThroughSubagent is seed 004's attack through agent.delegate, both
// ways a delegation could launder the taint. The subagent reads .env and the
// parent sends its answer: the subagent's read tainted the parent (TaintAdded
// on the delegating call, the label naming the subagent), so the send is
// asked as a release of the .env's data, and unanswered. The parent reads .env
// and has a subagent send it: the subagent inherited the taint, so its send is
// asked and refused; a careless person approving the release still meets the
// egress scan the parent's read turned on. Nothing reaches the collector; the
// control (no permission layer) shows the subagent's send does arrive.
func TestExfilThroughSubagent(t *testing.T) {
	res, evs, col := exfilSession(t, approvalsPermissions(t, generous), "delegate", mountDelegate(t))
	if got := col.requests(); len(got) != 0 {
		t.Fatalf("the collector received %q", got)
	}
	if res.StopReason != StopPolicy || !strings.Contains(res.Detail, "unanswered") || !strings.Contains(res.Detail, "file:.env") {
		t.Fatalf("the parent's send: %s: %s", res.StopReason, res.Detail)
	}
	if n := len(ofType(evs, trace.SubagentStarted)); n != 1 || len(ofType(evs, trace.SubagentFinished)) != 1 {
		t.Fatalf("%d SubagentStarted", n)
	}
	var taint *trace.TaintInfo
	for _, e := range ofType(evs, trace.TaintAdded) {
		if e.CallID == ofType(evs, trace.SubagentStarted)[0].CallID {
			taint = &trace.TaintInfo{}
			json.Unmarshal(e.Data, taint)
		}
	}
	if taint == nil || len(taint.Labels) == 0 || taint.Labels[0].Source != "file:.env" || len(taint.Labels[0].Via) == 0 {
		t.Fatalf("the delegating call's taint: %+v", taint)
	}

	for _, reckless := range []bool{false, true} {
		g := approvalsPermissions(t, generous)
		if reckless {
			g.Approver = careless{}
		}
		_, evs, col = exfilSession(t, g, "delegate-send", mountDelegate(t))
		if got := col.requests(); len(got) != 0 {
			t.Fatalf("reckless %t: the collector received %q", reckless, got)
		}
		var sendDecided *trace.CallDecision
		for _, e := range subagentEvents(evs, trace.CallDecided) {
			var c trace.CallDecision
			json.Unmarshal(e.Data, &c)
			if c.Tool == "http.fetch" && sendDecided == nil {
				sendDecided = &c // the first: the one a person was asked about
			}
		}
		if sendDecided == nil || sendDecided.Verdict.Decision != policy.Ask {
			t.Fatalf("reckless %t: the subagent's send was decided %+v", reckless, sendDecided)
		}
		var named bool
		for _, j := range sendDecided.Verdict.Needs {
			named = named || j.Need.Kind == policy.KindRelease && len(j.Taint) > 0 && j.Taint[0].Source == "file:.env"
		}
		if !named {
			t.Fatalf("reckless %t: the subagent's send names no release of the .env's data: %+v", reckless, sendDecided.Verdict)
		}
		var end trace.SubagentEnd
		json.Unmarshal(ofType(evs, trace.SubagentFinished)[0].Data, &end)
		if !reckless && (end.StopReason != string(StopPolicy) || !strings.Contains(end.Detail, "unanswered")) {
			t.Fatalf("the subagent stopped with %+v", end)
		}
		if reckless && !strings.Contains(string(lastSubagentResult(evs).Data)+lastSubagentResult(evs).Text, "secret_in_request") {
			t.Fatalf("the careless release met no scan: %+v", lastSubagentResult(evs))
		}
	}

	_, _, col = exfilSession(t, nil, "delegate-send", mountDelegate(t))
	if got := col.requests(); len(got) != 1 || !strings.Contains(got[0], "DB_PASSWORD=") {
		t.Fatalf("without a gate the subagent's send did not arrive: %q", got)
	}
}

func lastSubagentResult(evs []trace.Event) tool.Envelope {
	fin := subagentEvents(evs, trace.ToolExecutionFinished)
	var f trace.ToolFinish
	if len(fin) > 0 {
		json.Unmarshal(fin[len(fin)-1].Data, &f)
	}
	return f.Result
}

// TestDelegateSpendsParentBudget: what a subagent spends is its parent's: its
// tool calls count in the parent's result, and a parent with no tool call left
// after the delegating one starts no subagent (EBUDGET), where before a
// subagent had a whole budget of its own.
func TestDelegateSpendsParentBudget(t *testing.T) {
	for _, tc := range []struct {
		calls, want, reads int
	}{{3, 2, 1}, {1, 1, 0}} {
		g := &Permissions{Sandbox: policy.SandboxNamespace, Overlay: true}
		r, w := guarded(t, g)
		mountDelegate(t)(r)
		b, _ := json.Marshal(map[string]string{"goal": "read calc.py"})
		res, evs, _ := session(t, Options{Policy: &Sequence{Decisions: []Decision{{Tool: DelegateName, Args: b}}}, Tools: r,
			Permissions: g, Limits: Limits{MaxToolCalls: tc.calls}})
		if res.ToolCalls != tc.want || w.calls["fs.read"] != tc.reads {
			t.Fatalf("budget %d: %d tool calls, %d reads; want %d, %d (%s: %s)", tc.calls, res.ToolCalls, w.calls["fs.read"],
				tc.want, tc.reads, res.StopReason, res.Detail)
		}
		if tc.reads == 0 {
			if r := lastResult(evs); r.Error == nil || r.Error.Code != tool.EBUDGET || len(ofType(evs, trace.SubagentStarted)) != 0 {
				t.Fatalf("budget %d: the delegation's result %+v", tc.calls, r)
			}
		}
	}
}
