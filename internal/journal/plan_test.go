package journal

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/trace"
)

// planItem is an item as the test's own model of the plan knows it.
type planItem struct {
	rev   int
	stale bool
}

// planLog emits a session whose steps revise the plan (items kept, dropped,
// added, their statuses changed) and are interleaved with steers of random
// kinds. It stamps each item's revision and names the items a steer makes
// stale from its own model (a kept id keeps the revision it was made under; a
// correction or a replacement leaves behind every item made before it), not
// with Plan's methods, and returns every item ever made, by id and revision.
func planLog(t *rapid.T) ([]trace.Event, grant.Goal, map[string]planItem) {
	mem := &trace.Memory{}
	log := trace.NewLog(trace.LogOptions{Session: "s-plan", Sinks: []trace.Sink{mem}})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-plan", Goal: "g"})
	var goal grant.Goal
	var id int64
	made := map[string]planItem{} // "id@rev"
	var cur []string              // current ids, in plan order
	curRev := map[string]int{}    // and the revision each was made under
	statuses := []string{trace.PlanPending, trace.PlanInProgress, trace.PlanDone}
	for step := 1; step <= rapid.IntRange(1, 10).Draw(t, "steps"); step++ {
		log.Emit(trace.TurnStarted, step, "", trace.TurnStart{})
		if rapid.IntRange(0, 2).Draw(t, "revise") > 0 {
			var next []string
			for _, c := range cur {
				if rapid.IntRange(0, 4).Draw(t, "keep") > 0 {
					next = append(next, c)
				}
			}
			for range rapid.IntRange(0, 3).Draw(t, "new items") {
				n := fmt.Sprintf("i%d", rapid.IntRange(0, 6).Draw(t, "id"))
				if !slices.Contains(next, n) {
					next = append(next, n)
				}
			}
			u := trace.PlanUpdate{Items: []trace.PlanItem{}, GoalRevision: goal.Revision}
			revs := map[string]int{}
			for _, n := range next {
				rev := goal.Revision
				if slices.Contains(cur, n) {
					rev = curRev[n]
				}
				revs[n] = rev
				made[fmt.Sprintf("%s@%d", n, rev)] = planItem{rev: rev}
				u.Items = append(u.Items, trace.PlanItem{ID: n, Text: "do " + n, Status: rapid.SampledFrom(statuses).Draw(t, "status"), GoalRevision: rev})
			}
			cur, curRev = next, revs
			log.Emit(trace.PlanUpdated, step, "", u)
		}
		for range rapid.IntRange(0, 2).Draw(t, "steers") {
			id++
			k := rapid.SampledFrom([]grant.Steer{grant.Supplement, grant.Correct, grant.Replace}).Draw(t, "kind")
			goal, _ = goal.Steer(k)
			var stale []string
			if k != grant.Supplement {
				for _, n := range cur {
					key := fmt.Sprintf("%s@%d", n, curRev[n])
					made[key] = planItem{rev: curRev[n], stale: true}
					stale = append(stale, n)
				}
				cur, curRev = nil, map[string]int{}
			}
			log.Emit(trace.GoalRevised, step, "", trace.GoalRevision{Steer: trace.SteerRequest{ID: id, Kind: string(k)},
				Revision: goal.Revision, Epoch: goal.Epoch, Goal: "g", SafePoint: trace.SafePoint{Action: trace.SafeBoundary}, StalePlan: stale})
		}
		log.Emit(trace.TurnCompleted, step, "", trace.TurnEnd{})
	}
	return mem.Events(), goal, made
}

// TestFoldPlanProperty: the fold of any plan revised across steers holds every
// item still current with the revision it was made under, each item a
// correction or replacement left behind as stale (kept, never dropped; none
// that fits the goal), nothing stale in what the policy sees (Current), and
// folds to the same state from any snapshot with any redelivered overlap.
func TestFoldPlanProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs, goal, made := planLog(t)
		st, err := Fold(evs)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range st.Plan {
			key := fmt.Sprintf("%s@%d", it.ID, it.GoalRevision)
			m, ok := made[key]
			if !it.Stale && !goal.Fits(it.GoalRevision) {
				t.Fatalf("item %s is current at goal %+v", key, goal)
			}
			if !ok || (m.stale != it.Stale) {
				t.Fatalf("item %s: stale %t, the model says %+v (made %t)", key, it.Stale, m, ok)
			}
		}
		for key, m := range made {
			if m.stale && !slices.ContainsFunc(st.Plan, func(it trace.PlanItem) bool {
				return it.Stale && fmt.Sprintf("%s@%d", it.ID, it.GoalRevision) == key
			}) {
				t.Fatalf("stale item %s was dropped from the record: %+v", key, st.Plan)
			}
		}
		for _, it := range st.Plan.Current() {
			if it.Stale || !goal.Fits(it.GoalRevision) {
				t.Fatalf("the policy would see %+v at goal %+v", it, goal)
			}
		}
		foldsFromAnySnapshot(t, evs, st)
	})
}

// TestFoldPlanInvariants: a plan item that claims an older revision than the
// goal's when new, a kept item whose revision changed, one sent as stale, a
// duplicate id, an unknown status, a plan of another revision, and a goal
// change that names other items stale than it makes stale: each breaks the
// fold.
func TestFoldPlanInvariants(t *testing.T) {
	mk, seq := payloadEvent, numbered
	created := mk(trace.SessionCreated, trace.SessionInfo{Session: "s", Goal: "g"})
	item := func(id string, rev int) trace.PlanItem {
		return trace.PlanItem{ID: id, Text: "t", Status: trace.PlanPending, GoalRevision: rev}
	}
	plan := func(rev int, items ...trace.PlanItem) trace.Event {
		return mk(trace.PlanUpdated, trace.PlanUpdate{Items: items, GoalRevision: rev})
	}
	rev := func(id int64, kind string, r, e int, stale ...string) trace.Event {
		return mk(trace.GoalRevised, trace.GoalRevision{Steer: trace.SteerRequest{ID: id, Kind: kind}, Revision: r, Epoch: e, StalePlan: stale})
	}
	legal := seq(created, plan(0, item("a", 0)), rev(1, "supplement", 1, 0), plan(1, item("a", 0), item("b", 1)),
		rev(2, "correct", 2, 2, "a", "b"), plan(2, item("a", 2)))
	st, err := Fold(legal)
	if err != nil || len(st.Plan) != 3 || !st.Plan[0].Stale || !st.Plan[1].Stale || st.Plan[2].Stale ||
		!slices.Equal(st.Plan.Current(), []trace.PlanItem{item("a", 2)}) {
		t.Fatalf("a legal log: %+v %v", st.Plan, err)
	}
	staleItem := item("a", 0)
	staleItem.Stale = true
	badStatus := item("a", 0)
	badStatus.Status = "maybe"
	for name, evs := range map[string][]trace.Event{
		"new item of an old revision": seq(created, rev(1, "supplement", 1, 0), plan(1, item("a", 0))),
		"kept item's revision moved":  seq(created, plan(0, item("a", 0)), rev(1, "supplement", 1, 0), plan(1, item("a", 1))),
		"sent as stale":               seq(created, plan(0, staleItem)),
		"duplicate id":                seq(created, plan(0, item("a", 0), item("a", 0))),
		"unknown status":              seq(created, plan(0, badStatus)),
		"plan of another revision":    seq(created, plan(1, item("a", 1))),
		"stale items not named":       seq(created, plan(0, item("a", 0)), rev(1, "replace", 1, 1)),
		"stale items named wrongly":   seq(created, plan(0, item("a", 0)), rev(1, "supplement", 1, 0, "a")),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Fold(evs); !errors.Is(err, ErrInvariant) {
				t.Fatalf("folded: %v", err)
			}
		})
	}
}
