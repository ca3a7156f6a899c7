package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsSteer steers a durable session through the real binary: the
// agent is killed midway, a person asks and corrects with agentbox sessions
// steer (another process, no driver running), and agentbox resume takes both
// at its first safe point: the ask answered with the goal unchanged, the
// correction a new goal revision. sessions show and the step trace show the
// choices; bad steers and a steer of an ended session are refused.
func TestSessionsSteer(t *testing.T) {
	ws, _, env := sessionFixture(t)
	dir := t.TempDir()
	sess, ledger := filepath.Join(dir, "s"), filepath.Join(dir, "ledger")
	_, errOut, st := run(t, append(append([]string{}, env...), "AGENTBOX_CRASH_AT=seq:20"), "agent", "--workspace", ws,
		"--goal", "the long task", "--mode", "long", "--session", sess, "--ledger", ledger, "--test-cmd", "true",
		"--grant", "tool:ledger.append", "--compact-after", "8")
	if st != -1 {
		t.Fatalf("the agent was not killed: exit %d\n%s", st, errOut)
	}
	for _, bad := range [][]string{
		{"--kind", "rethink", "--message", "x"},
		{"--kind", "correct", "--message", " "},
		{"--kind", "ask"},
	} {
		if out, errOut, st := run(t, env, append([]string{"sessions", "steer", sess}, bad...)...); st == 0 {
			t.Fatalf("steer %v accepted:\n%s", bad, out)
		} else if bad[1] == "rethink" && !strings.Contains(errOut, "supplement, correct, replace or ask") {
			t.Fatalf("steer %v: the error does not name the kinds: %s", bad, errOut)
		}
	}
	for _, s := range [][]string{{"ask", "how far are you?"}, {"correct", "patch item3 before item2"}} {
		if out, errOut, st := run(t, env, "sessions", "steer", sess, "--kind", s[0], "--message", s[1]); st != 0 {
			t.Fatalf("steer %s: exit %d\n%s\n%s", s[0], st, out, errOut)
		}
	}
	if out, _, _ := run(t, env, "sessions", "show", sess); !strings.Contains(out, `"message": "patch item3 before item2"`) {
		t.Fatalf("sessions show does not list the waiting steers:\n%s", out)
	}
	// The correction drops the grants of the old goal, --grant's too: the
	// ledger's release waits for a person's approval again.
	tr := filepath.Join(dir, "trace.jsonl")
	if out, errOut, st := run(t, env, "resume", sess); st != 1 || !strings.Contains(out, "stop_reason: paused") {
		t.Fatalf("resume after the correction: exit %d, want paused for an approval\n%s\n%s", st, out, errOut)
	}
	if out, errOut, st := run(t, env, "sessions", "approve", sess, "req_1"); st != 0 {
		t.Fatalf("approve: exit %d\n%s\n%s", st, out, errOut)
	}
	if out, errOut, st := run(t, env, "resume", sess, "--trace", tr); st != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", st, out, errOut)
	}
	out, errOut, st := run(t, env, "sessions", "show", sess)
	var v struct {
		Goal struct {
			Revision int `json:"goal_revision"`
			Epoch    int `json:"epoch"`
		} `json:"goal"`
		GoalText string `json:"goal_text"`
		Steers   []struct {
			Kind      string
			SafePoint string `json:"safe_point"`
			Answer    string
			Revision  int `json:"goal_revision"`
		} `json:"steers"`
		Plan []struct {
			ID       string
			Status   string
			Revision int `json:"goal_revision"`
			Stale    bool
		} `json:"plan"`
	}
	if st != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("sessions show: %d\n%s\n%s", st, out, errOut)
	}
	if len(v.Steers) != 2 || v.Steers[0].Kind != "ask" || !strings.Contains(v.Steers[0].Answer, "The goal is unchanged") ||
		v.Steers[1].Kind != "correct" || v.Steers[1].SafePoint != "step_boundary" || v.Steers[1].Revision != 1 {
		t.Fatalf("steers taken: %+v", v.Steers)
	}
	if v.Goal.Revision != 1 || v.Goal.Epoch != 1 || !strings.Contains(v.GoalText, "Corrected by the person (goal revision 1): patch item3 before item2") {
		t.Fatalf("goal %+v %q", v.Goal, v.GoalText)
	}
	// The plan made before the correction is kept, stale; the one made again
	// under revision 1 is done.
	stale, done := 0, 0
	for _, it := range v.Plan {
		switch {
		case it.Stale && it.Revision == 0:
			stale++
		case !it.Stale && it.Revision == 1 && it.Status == "done":
			done++
		}
	}
	if stale == 0 || done == 0 || stale+done != len(v.Plan) {
		t.Fatalf("plan: %+v", v.Plan)
	}
	b, err := os.ReadFile(tr)
	if err != nil || !strings.Contains(string(b), `"stale_plan":["item0"`) || !strings.Contains(string(b), `"safe_point":"step_boundary"`) || !strings.Contains(string(b), `"kind":"ask"`) {
		t.Fatalf("the step trace does not show the steers (%v):\n%s", err, b)
	}
	if _, errOut, st := run(t, env, "sessions", "steer", sess, "--kind", "supplement", "--message", "too late"); st == 0 || !strings.Contains(errOut, "ended") {
		t.Fatalf("a steer of an ended session: exit %d, %s", st, errOut)
	}
}
