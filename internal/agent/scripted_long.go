package agent

import (
	"fmt"

	"github.com/agentbox/agentbox/internal/trace"
)

// ModeLong is the crash campaign's session (seed 004: long tasks): dozens of
// steps mixing writes, reads, str_replace patches, listings, test runs and one
// ledger.append (LedgerTool), an effect outside the sandbox that must happen
// exactly once. It works in any workspace, on files under long/, and finishes
// with task.finish once the tests pass. A failed ledger.append (a person
// resolved it as failed) is made again; a refused task.finish (a resumed
// environment has no test record) runs the tests first. It keeps a plan, an
// item per file, the release and the finish, revised as each starts and
// ends, and made again when a correction leaves it stale.
const ModeLong = "long"

// LongItems is how many files ModeLong writes and patches.
const LongItems = 8

// longStep is a step of ModeLong's script and the plan item it belongs to.
type longStep struct {
	Decision
	item int // index into longPlan
}

func longScript(session string) []longStep {
	var out []longStep
	add := func(item int, ds ...Decision) {
		for _, d := range ds {
			out = append(out, longStep{d, item})
		}
	}
	for k := range LongItems {
		path := fmt.Sprintf("long/item%d.txt", k)
		add(k, call("fs.write", map[string]any{"path": path, "content": fmt.Sprintf("item %d: todo\n", k)}),
			call("fs.read", map[string]any{"path": path}),
			call("patch.apply", map[string]any{"path": path, "old": "todo", "new": "done"}))
		if k%4 == 3 {
			add(k, call("fs.list", map[string]any{"path": "long"}), call("test.run", map[string]any{}))
		}
		if k == 4 {
			add(LongItems, call("ledger.append", map[string]any{"entry": "release " + session}))
		}
	}
	add(LongItems+1, call("test.run", map[string]any{}),
		call("task.finish", map[string]any{"summary": fmt.Sprintf("wrote and patched %d files, released once", LongItems)}))
	return out
}

// longPlan is ModeLong's plan when it is about to take step i of script: the
// items whose steps are all before i done, the one of step i in progress, the
// rest pending; the finishing call completes it.
func longPlan(script []longStep, i int) []trace.PlanItem {
	var out []trace.PlanItem
	for k := range LongItems {
		out = append(out, trace.PlanItem{ID: fmt.Sprintf("item%d", k), Text: fmt.Sprintf("write, read and patch long/item%d.txt", k)})
	}
	out = append(out, trace.PlanItem{ID: "release", Text: "append the release to the ledger, once"},
		trace.PlanItem{ID: "finish", Text: "run the tests and finish"})
	first, last := make([]int, len(out)), make([]int, len(out))
	for n := len(script) - 1; n >= 0; n-- {
		first[script[n].item] = n
	}
	for n, st := range script {
		last[st.item] = n
	}
	for k := range out {
		switch {
		case last[k] < i || i >= len(script)-1:
			out[k].Status = trace.PlanDone
		case first[k] <= i:
			out[k].Status = trace.PlanInProgress
		default:
			out[k].Status = trace.PlanPending
		}
	}
	return out
}

// samePlan reports whether the policy's current plan already says what want
// says (ids, texts and statuses, in order).
func samePlan(cur, want []trace.PlanItem) bool {
	if len(cur) != len(want) {
		return false
	}
	for i := range cur {
		if cur[i].ID != want[i].ID || cur[i].Text != want[i].Text || cur[i].Status != want[i].Status {
			return false
		}
	}
	return true
}

func (p *Scripted) long(s *State) Decision {
	script := longScript(s.Session)
	i, refused := 0, 0
	var last Turn
	for n, t := range s.History {
		switch {
		case !t.Result.OK && t.Decision.Tool == "ledger.append":
		case !t.Result.OK && t.Decision.Tool == "task.finish":
			refused++
		case t.Decision.Tool == "test.run" && n > 0 && !s.History[n-1].Result.OK && s.History[n-1].Decision.Tool == "task.finish":
		default:
			i++
		}
		last = t
	}
	var d Decision
	switch {
	case refused > 3:
		return stopAfter(last, "task.finish was refused 4 times")
	case len(s.History) > 0 && !last.Result.OK && last.Decision.Tool == "task.finish":
		d = call("test.run", map[string]any{})
	case i >= len(script):
		d = Decision{Stop: true, Reason: "the script is over"}
	default:
		d = script[i].Decision
	}
	if want := longPlan(script, i); !samePlan(s.Plan, want) {
		d.Plan = want
	}
	return d
}
