package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// gatedWork is the long mode's in-memory environment with perms as its
// registry's gate and fs.write described to the policy.
func gatedWork(t *testing.T, perms *Permissions, ledger string) (*tool.Registry, *memWork) {
	t.Helper()
	plain, w := newMemWork(t, ledger)
	r := tool.NewRegistry(tool.Options{Scopes: append(tool.BuiltinScopes, tool.ScopeMCP), Gate: perms})
	for _, d := range plain.Defs() {
		s, _ := plain.Spec(d.Name)
		if s.Name == "fs.write" {
			s.Describe = func(_ context.Context, raw json.RawMessage) (policy.Action, error) {
				return policy.Action{Writes: []string{args[struct{ Path string }](raw).Path}}, nil
			}
		}
		if err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	r.SetWorld(w)
	return r, w
}

func writeCall(path, content string) Decision {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return Decision{Tool: "fs.write", Args: b}
}

func ledgerCall(entry string) Decision {
	b, _ := json.Marshal(map[string]string{"entry": entry})
	return Decision{Tool: "ledger.append", Args: b}
}

// drive runs (or resumes) the durable session in dir with a Mailbox approver
// that waits wait, and returns how it stopped and the environment it left.
func drive(t *testing.T, dir, ledger string, wait time.Duration, notify func(grant.Request), ds ...Decision) (*Result, *memWork) {
	t.Helper()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	perms, err := NewPermissions(PermissionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	perms.Approver = &Mailbox{Store: s, Wait: wait, Poll: 5 * time.Millisecond, Notify: notify}
	r, w := gatedWork(t, perms, ledger)
	res, _, err := RunDurable(context.Background(), s, w, Options{Goal: "g", Policy: &Sequence{Decisions: ds}, Tools: r,
		Permissions: perms}, trace.LogOptions{Session: "s-approve", Clock: fixedClock()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, w
}

func answer(t *testing.T, dir, req string, allow bool, scope string) error {
	t.Helper()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = AnswerRequest(s, req, allow, scope, "user")
	return err
}

// TestApprovalPauseResume: an ask in a durable session with nobody waiting
// pauses it with the request recorded (a resume before an answer pauses again);
// the held call has not run (ledger.append,
// an effect that cannot be checked, is not left unknown); once a person answers
// through the mailbox, resume records the answer and makes the held call, once.
// A one-time approval covers that call only (the next write is asked again);
// an approval with a scope grants it for the session, and a later resume still
// holds it (before, a resume dropped every grant and asked again). A second answer to a request is refused.
func TestApprovalPauseResume(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "ledger")
	res, _ := drive(t, dir, ledger, 0, nil, ledgerCall("deploy-1"), writeCall(".git/config", "a"), writeCall(".git/config", "b"))
	if res.StopReason != StopPaused || !strings.Contains(res.Detail, "req_1") || ledgerLines(t, ledger) != 0 {
		t.Fatalf("first run: %s (%s), %d ledger lines; want paused on req_1, none", res.StopReason, res.Detail, ledgerLines(t, ledger))
	}
	// A resume before anyone answered pauses again on the same request, asked once.
	res, _ = drive(t, dir, ledger, 0, nil, writeCall(".git/config", "a"), writeCall(".git/config", "b"))
	if st := loadState(t, dir); res.StopReason != StopPaused || !strings.Contains(res.Detail, "req_1") || st.Requested != 1 || ledgerLines(t, ledger) != 0 {
		t.Fatalf("a resume with no answer: %s (%s), %d requests, %d ledger lines", res.StopReason, res.Detail, st.Requested, ledgerLines(t, ledger))
	}
	if err := answer(t, dir, "req_9", true, ""); err == nil || !strings.Contains(err.Error(), "req_1") {
		t.Fatalf("an answer to a request not asked: %v", err)
	}
	if err := answer(t, dir, "req_1", true, ""); err != nil {
		t.Fatal(err)
	}
	if err := answer(t, dir, "req_1", false, ""); !errors.Is(err, journal.ErrAnswered) {
		t.Fatalf("a second answer to req_1: %v; want ErrAnswered", err)
	}

	// The resume that finds req_1 answered tells nobody it awaits; req_2, new, is told.
	var told []string
	res, _ = drive(t, dir, ledger, 0, func(r grant.Request) { told = append(told, r.ID) }, writeCall(".git/config", "a"), writeCall(".git/config", "b"))
	if !slices.Equal(told, []string{"req_2"}) {
		t.Errorf("notified of %q; want only req_2 (req_1 was answered)", told)
	}
	if res.StopReason != StopPaused || !strings.Contains(res.Detail, "req_2") || ledgerLines(t, ledger) != 1 {
		t.Fatalf("second run: %s (%s), %d ledger lines; want paused on req_2, one", res.StopReason, res.Detail, ledgerLines(t, ledger))
	}
	if err := answer(t, dir, "req_2", true, "write:.github/**"); err == nil {
		t.Fatal("a scope that does not cover the item was accepted")
	}
	if err := answer(t, dir, "req_2", true, "write:.git/**"); err != nil {
		t.Fatal(err)
	}

	res, w := drive(t, dir, ledger, 0, nil, ledgerCall("deploy-2"), writeCall(".git/config", "b"))
	if res.StopReason != StopPaused || !strings.Contains(res.Detail, "req_3") || w.files[".git/config"] != "a" {
		t.Fatalf("third run: %s (%s), .git/config %q; want paused on req_3 after writing a", res.StopReason, res.Detail, w.files[".git/config"])
	}
	if err := answer(t, dir, "req_3", true, ""); err != nil {
		t.Fatal(err)
	}
	res, w = drive(t, dir, ledger, 0, nil, writeCall(".git/config", "b"))
	if res.StopReason != StopPolicy || w.files[".git/config"] != "b" || ledgerLines(t, ledger) != 2 {
		t.Fatalf("fourth run: %s (%s), .git/config %q, %d ledger lines; want b written under the grant of the second", res.StopReason, res.Detail,
			w.files[".git/config"], ledgerLines(t, ledger))
	}
	st := loadState(t, dir)
	if len(st.Awaiting) != 0 || st.Requested != 3 {
		t.Fatalf("the journal: awaiting %v, %d requests; want none awaiting, three asked", st.Awaiting, st.Requested)
	}
	var resolved []trace.ApprovalResolution
	evs := loadEvents(t, dir)
	for _, e := range evs {
		if e.Type == trace.ApprovalResolved {
			var r trace.ApprovalResolution
			json.Unmarshal(e.Data, &r)
			resolved = append(resolved, r)
		}
	}
	if len(resolved) != 3 || !resolved[0].Grants[0].Once() || resolved[1].Grants[0].Capability != "write:.git/**" || !resolved[2].Grants[0].Once() {
		t.Fatalf("ApprovalResolved: %+v", resolved)
	}
}

// TestApprovalDeniedAfterPause: a refusal left in the mailbox refuses the
// held call on resume: it never runs and the policy sees EPERM naming who refused.
func TestApprovalDeniedAfterPause(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "ledger")
	if res, _ := drive(t, dir, ledger, 0, nil, ledgerCall("deploy-1")); res.StopReason != StopPaused {
		t.Fatalf("first run: %s (%s)", res.StopReason, res.Detail)
	}
	if err := answer(t, dir, "req_1", false, "write:**"); err == nil {
		t.Fatal("a refusal with a scope was accepted")
	}
	if err := answer(t, dir, "req_1", false, ""); err != nil {
		t.Fatal(err)
	}
	res, _ := drive(t, dir, ledger, 0, nil)
	st := loadState(t, dir)
	c := st.Calls["call_1"]
	if res.StopReason != StopPolicy || ledgerLines(t, ledger) != 0 || c.Result == nil || c.Result.Result.Error == nil ||
		c.Result.Result.Error.Code != tool.EPERM || !strings.Contains(c.Result.Result.Error.Message, "refused by user") {
		t.Fatalf("resumed after a refusal: %s (%s), %d ledger lines, call %+v", res.StopReason, res.Detail, ledgerLines(t, ledger), c.Result)
	}
}

// TestApprovalWait: a driver that waits takes an answer left while it waits
// and goes on in the same run; one that waits in vain stops with policy_stop,
// never a silent allow.
func TestApprovalWait(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "ledger")
	errc := make(chan error, 1)
	notify := func(r grant.Request) { go func() { errc <- answer(t, dir, r.ID, true, grant.ScopeSuggested) }() }
	res, _ := drive(t, dir, ledger, time.Minute, notify, ledgerCall("deploy-1"), ledgerCall("deploy-2"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopPolicy || ledgerLines(t, ledger) != 2 {
		t.Fatalf("waiting run: %s (%s), %d ledger lines; want both appended after one approval", res.StopReason, res.Detail, ledgerLines(t, ledger))
	}

	dir, ledger = t.TempDir(), filepath.Join(t.TempDir(), "ledger")
	res, _ = drive(t, dir, ledger, 20*time.Millisecond, nil, ledgerCall("deploy-1"))
	if res.StopReason != StopPolicy || !strings.Contains(res.Detail, "unanswered") || ledgerLines(t, ledger) != 0 {
		t.Fatalf("waiting in vain: %s (%s), %d ledger lines", res.StopReason, res.Detail, ledgerLines(t, ledger))
	}
}

func loadEvents(t testing.TB, dir string) []trace.Event {
	t.Helper()
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
