package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/agentbox/agentbox/internal/trace"
)

// sessionFixture is the long scripted session's setup (root only): a
// workspace with one file, and an environment whose HOME and TMPDIR are the
// test's own directory tmp.
func sessionFixture(t *testing.T) (ws, tmp string, env []string) {
	t.Helper()
	testenv.RequireRoot(t)
	ws = t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp = t.TempDir()
	return ws, tmp, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp}
}

// TestResumeAfterSIGKILL is the SIGKILL sample of the crash campaign (the bulk
// is agent.TestCrashCampaign, in process): the real agentbox agent --session
// with a real local environment kills itself (AGENTBOX_CRASH_AT) at points of
// seed 004's matrix, and agentbox resume, as many times as it takes (a person
// resolving unknown calls from the ledger with agentbox sessions resolve),
// must reach the uninterrupted run's diff with one ledger entry, and leave no
// environment directory behind.
func TestResumeAfterSIGKILL(t *testing.T) {
	ws, tmp, env := sessionFixture(t)
	agentArgs := func(dir, ledger string) []string {
		return []string{"agent", "--workspace", ws, "--goal", "the long task", "--mode", "long", "--session", dir,
			"--ledger", ledger, "--test-cmd", "true", "--grant", "tool:ledger.append"}
	}
	refDir := t.TempDir()
	refDiff, refEvents := filepath.Join(refDir, "diff"), filepath.Join(refDir, "events.jsonl")
	if out, errOut, st := run(t, env, append(agentArgs(filepath.Join(refDir, "s"), filepath.Join(refDir, "ledger")),
		"--diff-out", refDiff, "--events", refEvents)...); st != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s\n%s", st, out, errOut)
	}
	want, _ := os.ReadFile(refDiff)
	b, _ := os.ReadFile(refEvents)
	evs, err := trace.ReadEvents(bytes.NewReader(b))
	if err != nil || len(evs) < 100 {
		t.Fatalf("reference events: %d, %v", len(evs), err)
	}
	started := map[string]int64{} // tool → the seq of its first ToolExecutionStarted
	for _, e := range evs {
		if e.Type == trace.ToolExecutionStarted {
			var s trace.ToolStart
			json.Unmarshal(e.Data, &s)
			if _, ok := started[s.Tool]; !ok {
				started[s.Tool] = e.Seq
			}
		}
	}
	last := evs[len(evs)-1].Seq
	cases := [][]string{ // the points of successive kills
		{fmt.Sprintf("effect-after:%d", started["ledger.append"])},  // the effect happened, its result lost: unknown
		{fmt.Sprintf("effect-before:%d", started["ledger.append"])}, // the intent recorded, no effect: unknown too
		{fmt.Sprintf("effect-after:%d", started["patch.apply"])},    // verifiable: reconciled by the content hash
		{fmt.Sprintf("seq:%d", started["test.run"]-1)},              // the intent not yet recorded
		{"snapshot:32"},
		{fmt.Sprintf("seq:%d", last)},  // ended, and the process died before it said so
		{"seq:7", "seq:40", "seq:120"}, // three kills in a row (a resume's seqs include its recovery events)
	}
	kills, paused := 0, 0
	for _, points := range cases {
		t.Run(strings.Join(points, "+"), func(t *testing.T) {
			dir := t.TempDir()
			sess, ledger, diff := filepath.Join(dir, "s"), filepath.Join(dir, "ledger"), filepath.Join(dir, "diff")
			crash := append([]string{}, env...)
			_, errOut, st := run(t, append(crash, "AGENTBOX_CRASH_AT="+points[0]), agentArgs(sess, ledger)...)
			if st != -1 { // killed by a signal
				t.Fatalf("the agent was not killed at %s: exit %d\n%s", points[0], st, errOut)
			}
			kills++
			for i, n := 1, 0; ; n++ {
				if n > 6 {
					t.Fatal("no convergence after 6 resumes")
				}
				e := env
				if i < len(points) {
					e = append(append([]string{}, env...), "AGENTBOX_CRASH_AT="+points[i])
				}
				out, errOut, st := run(t, e, "resume", sess, "--diff-out", diff)
				switch {
				case st == -1 && i < len(points):
					i++
					kills++
					continue
				case st == 0:
				case st == 1 && strings.Contains(out, "stop_reason: paused"):
					paused++
					call := pausedCall(t, env, sess)
					verdict := "failed"
					if b, _ := os.ReadFile(ledger); len(b) > 0 {
						verdict = "succeeded"
					}
					if o, e, st := run(t, env, "sessions", "resolve", sess, call, "--as", verdict); st != 0 {
						t.Fatalf("resolve: %d\n%s\n%s", st, o, e)
					}
					continue
				default:
					t.Fatalf("resume: exit %d\n%s\n%s", st, out, errOut)
				}
				break
			}
			got, _ := os.ReadFile(diff)
			if !bytes.Equal(got, want) {
				t.Errorf("the final diff differs from the uninterrupted run's:\n%s\nwant:\n%s", got, want)
			}
			if b, _ := os.ReadFile(ledger); strings.Count(string(b), "\n") != 1 {
				t.Errorf("the ledger holds %q, want one entry", b)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "agentbox-agent-*")); len(left) > 0 {
		t.Errorf("environments left behind: %v", left)
	}
	// The ledger's two cases must have paused for a person (unknown).
	if paused < 2 || kills != 9 {
		t.Errorf("%d SIGKILLs, %d sessions paused unknown, want 9 and 2", kills, paused)
	}
	t.Logf("%d SIGKILLs, %d paused unknown, %d sessions converged", kills, paused, len(cases))
}

func pausedCall(t *testing.T, env []string, sess string) string {
	out, errOut, st := run(t, env, "sessions", "show", sess)
	var v struct {
		Unknown []string `json:"unknown"`
	}
	if st != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Unknown) != 1 {
		t.Fatalf("sessions show: %d\n%s\n%s", st, out, errOut)
	}
	return v.Unknown[0]
}
