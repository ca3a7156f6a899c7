package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsApprove: the interactive approval path end to end. The long
// session's ledger.append (an effect outside the sandbox) is asked, and with
// --session and no --approvals the session pauses with the request recorded,
// the ledger untouched; sessions show lists it, sessions approve answers it
// (a second answer is refused), and resume records the answer and makes the
// held call once, and the session finishes.
func TestSessionsApprove(t *testing.T) {
	ws, _, env := sessionFixture(t)
	dir := t.TempDir()
	sess, ledger := filepath.Join(dir, "s"), filepath.Join(dir, "ledger")
	out, errOut, st := run(t, env, "agent", "--workspace", ws, "--goal", "the long task", "--mode", "long", "--session", sess,
		"--ledger", ledger, "--test-cmd", "true")
	if st != 1 || !strings.Contains(out, "stop_reason: paused") || !strings.Contains(out, "req_1") ||
		!strings.Contains(errOut, "sessions approve|deny "+sess+" req_1") {
		t.Fatalf("agent: exit %d\n%s\n%s", st, out, errOut)
	}
	if _, err := os.Stat(ledger); err == nil {
		t.Fatal("the ledger was written before the approval")
	}
	out, errOut, st = run(t, env, "sessions", "show", sess)
	var v struct {
		Awaiting []struct {
			Call    string `json:"call"`
			Request struct {
				ID    string `json:"id"`
				Items []struct {
					Tool string `json:"tool"`
				} `json:"items"`
			} `json:"request"`
		} `json:"awaiting"`
	}
	if st != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Awaiting) != 1 || v.Awaiting[0].Request.ID != "req_1" ||
		v.Awaiting[0].Request.Items[0].Tool != "ledger.append" {
		t.Fatalf("sessions show: %d\n%s\n%s", st, out, errOut)
	}
	if out, errOut, st = run(t, env, "sessions", "approve", sess, "req_1"); st != 0 || !strings.Contains(out, "allowed for this call") {
		t.Fatalf("sessions approve: %d\n%s\n%s", st, out, errOut)
	}
	if _, errOut, st = run(t, env, "sessions", "deny", sess, "req_1"); st == 0 || !strings.Contains(errOut, "answered already") {
		t.Fatalf("a second answer: exit %d\n%s", st, errOut)
	}
	events := filepath.Join(dir, "events.jsonl")
	if out, errOut, st = run(t, env, "resume", sess, "--events", events); st != 0 || !strings.Contains(out, "stop_reason: done") {
		t.Fatalf("resume: %d\n%s\n%s", st, out, errOut)
	}
	// trace stats counts the interruption across the pause: one request, one approval.
	out, errOut, st = run(t, env, "trace", "stats", "--json", events)
	var stats struct {
		Requests int     `json:"approval_requests"`
		Approved int     `json:"approved"`
		Rate     float64 `json:"approval_rate"`
	}
	if st != 0 || json.Unmarshal([]byte(out), &stats) != nil || stats.Requests != 1 || stats.Approved != 1 || stats.Rate != 1 {
		t.Fatalf("trace stats: %d %+v\n%s\n%s", st, stats, out, errOut)
	}
	if b, _ := os.ReadFile(ledger); strings.Count(string(b), "\n") != 1 {
		t.Fatalf("the ledger holds %q, want one entry", b)
	}
}
