package agent

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/taint"
	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
	"github.com/agentbox/agentbox/internal/wire"
)

// daemonEnv serves an in-process environment manager over HTTP, as agentbox
// serve does, and returns a client-side service (wire.Remote, as a
// coordinator's driver speaks to its daemon) and an environment made on it:
// the environment and its processes outlive every driver the test runs.
// keep is the manager's KeepFinished (0: its default). It returns the
// environment's workspace too.
func daemonEnv(t *testing.T, keep int) (*wire.Remote, string, string) {
	t.Helper()
	testenv.RequireRoot(t)
	m, err := env.NewManager(env.Config{StateDir: t.TempDir(), KeepFinished: keep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close the environment manager: %v", err)
		}
	})
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "env-token-0123456789abcdef"
	s, err := api.New(api.Options{Config: config.Local(token, root), Service: m})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c, err := client.New(client.Options{URL: ts.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	r := wire.NewRemote(c)
	info, err := r.Create(context.Background(), env.CreateOptions{Workspace: ws, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return r, info.ID, ws
}

// byHistory proposes its decisions in order, the next one after the calls
// the history holds: a resumed driver goes on where the journal left off.
type byHistory []Decision

func (byHistory) Name() string { return "by-history" }

func (p byHistory) Next(_ context.Context, s *State) (Decision, error) {
	if i := len(s.History); i < len(p) {
		return p[i], nil
	}
	return Decision{Stop: true, Reason: "the list is over"}, nil
}

// attached is a daemon environment a driver attaches to: its workspace is the
// state itself, never re-derived (as the coordinator's restorer).
type attached struct{ *tool.Env }

func (attached) Restore(context.Context, []byte) error { return nil }

// daemonDriver runs one driver of the session in dir on the daemon's
// environment id: a new registry and store (a new process), the crash hook
// dying at the point kill names (runtime.Goexit in the driver's goroutine:
// nothing after it runs or is recorded, and the registry's recovery of a
// handler's panic cannot catch it). It returns nil if the driver died.
// gated drivers have the default permission layer, exec.run granted.
func daemonDriver(t *testing.T, dir string, svc tool.Service, id string, p Policy, kill string, gated ...bool) *Result {
	t.Helper()
	done := make(chan *Result, 1)
	go func() {
		var res *Result
		defer func() { done <- res }()
		hook := func(point string) {
			if point == kill {
				goruntime.Goexit()
			}
		}
		s, err := journal.Open(dir, journal.Options{NoSync: true, Crash: hook})
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Close()
		o := Options{Goal: "run the command", Policy: p, EnvID: id}
		eo := tool.EnvOptions{Service: svc, ID: id}
		if len(gated) > 0 && gated[0] {
			if o.Permissions, err = NewPermissions(PermissionConfig{Grants: []string{"exec:**"}}); err != nil {
				t.Error(err)
				return
			}
			eo.Gate = o.Permissions
		}
		e, err := tool.OpenEnv(context.Background(), eo)
		if err != nil {
			t.Error(err)
			return
		}
		defer e.Close(context.Background())
		o.Tools = e.Registry
		res, _, err = RunDurable(context.Background(), s, attached{e}, o, trace.LogOptions{Session: "s-reattach"}, hook)
		if err != nil {
			t.Error(err)
		}
	}()
	return <-done
}

// waitEvent polls the session in dir until it holds nth events of type typ,
// and returns the nth.
func waitEvent(t *testing.T, dir string, typ trace.Type, nth int) trace.Event {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		evs := slices.DeleteFunc(loadEvents(t, dir), func(e trace.Event) bool { return e.Type != typ })
		if len(evs) >= nth {
			return evs[nth-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events, want %d", len(evs), typ, nth)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pointOf is the crash point at the nth event of type typ.
func pointOf(t *testing.T, dir string, typ trace.Type, nth int) string {
	t.Helper()
	e := waitEvent(t, dir, typ, nth)
	name := map[trace.Type]string{trace.ToolExecutionProgress: "process-started", trace.RecoveryReconciled: "reattached"}[typ]
	return name + ":" + strconv.FormatInt(e.Seq, 10)
}

// outcomes are the RecoveryReconciled outcomes of call_1, and its results.
func outcomes(t *testing.T, dir string) (rec []string, results []trace.ToolFinish) {
	t.Helper()
	loadState(t, dir) // the invariants hold: every event folds strictly
	for _, e := range loadEvents(t, dir) {
		switch {
		case e.CallID != "call_1":
		case e.Type == trace.RecoveryReconciled:
			var r trace.Reconcile
			json.Unmarshal(e.Data, &r)
			rec = append(rec, r.Outcome)
		case e.Type == trace.ToolExecutionFinished:
			var f trace.ToolFinish
			json.Unmarshal(e.Data, &f)
			results = append(results, f)
		}
	}
	return rec, results
}

func ledgerOf(t *testing.T, svc tool.Service, id string) string {
	t.Helper()
	b, err := svc.ReadFile(context.Background(), env.Owner{}, id, "ran.log", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReattachStillRunning: a driver killed while exec.run's command runs in
// a daemon's environment (just after its process was recorded) leaves the
// command running; the resumed driver reconciles the call still_running and
// waits for it, is killed too while it waits, and the next one reconciles it
// still_running again and records its result, once: the command's own exit
// and output, the command having run exactly once (its ledger, ran.log, has
// one line).
func TestReattachStillRunning(t *testing.T) {
	svc, id, _ := daemonEnv(t, 0)
	dir := t.TempDir()
	p := byHistory{call("exec.run", map[string]any{"command": "echo run >> ran.log; while [ ! -e release ]; do sleep 0.05; done; echo finished"})}
	// The crash points are the seqs of events of this session: found as the
	// first driver reaches them, by a driver that dies there.
	if res := daemonDriver(t, dir, svc, id, p, "process-started:5"); res != nil {
		t.Fatalf("the first driver did not die at process-started:5: %+v", res)
	}
	if got := pointOf(t, dir, trace.ToolExecutionProgress, 1); got != "process-started:5" {
		t.Fatalf("the process was recorded at %s", got)
	}
	if res := daemonDriver(t, dir, svc, id, p, "reattached:7"); res != nil {
		t.Fatalf("the second driver did not die at reattached:7: %+v", res)
	}
	if got := pointOf(t, dir, trace.RecoveryReconciled, 1); got != "reattached:7" {
		t.Fatalf("the second driver reconciled at %s", got)
	}
	done := make(chan *Result, 1)
	go func() { done <- daemonDriver(t, dir, svc, id, p, "") }()
	pointOf(t, dir, trace.RecoveryReconciled, 2) // the third driver waits for it now
	if err := svc.WriteFile(context.Background(), env.Owner{}, id, "release", nil); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.StopReason != StopPolicy {
		t.Fatalf("the third driver: %+v", res)
	}
	rec, results := outcomes(t, dir)
	if !slices.Equal(rec, []string{trace.OutcomeStillRunning, trace.OutcomeStillRunning}) {
		t.Fatalf("reconciled %v, want still_running twice", rec)
	}
	if len(results) != 1 || !results[0].Result.OK || !strings.Contains(results[0].Result.Text, "finished") || !succeeded(results[0].Result) {
		t.Fatalf("results %+v, want one: the command's own", results)
	}
	if l := ledgerOf(t, svc, id); l != "run\n" {
		t.Fatalf("the command ran %d times (ran.log %q), want once", strings.Count(l, "run"), l)
	}
}

// TestReattachEnded: a command that ended while no driver ran gives its
// recorded exit and output as the call's result (succeeded, or failed for a
// non-zero exit), without running again; one the environment forgot (past
// KeepFinished) is unknown, and the session pauses for a person, the command
// not run again either.
func TestReattachEnded(t *testing.T) {
	for _, tc := range []struct {
		name, command, outcome string
		forget                 bool
	}{
		{"succeeded", "echo run >> ran.log; echo out-0", trace.OutcomeSucceeded, false},
		{"failed", "echo run >> ran.log; echo out-3; exit 3", trace.OutcomeFailed, false},
		{"forgotten", "echo run >> ran.log", trace.OutcomeUnknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, id, _ := daemonEnv(t, 1)
			dir := t.TempDir()
			p := byHistory{call("exec.run", map[string]any{"command": tc.command})}
			if res := daemonDriver(t, dir, svc, id, p, "process-started:5"); res != nil {
				t.Fatalf("the driver did not die: %+v", res)
			}
			var pr trace.ToolProgress
			json.Unmarshal(waitEvent(t, dir, trace.ToolExecutionProgress, 1).Data, &pr)
			if _, err := svc.Wait(context.Background(), env.Owner{}, id, pr.Process); err != nil {
				t.Fatal(err)
			}
			if tc.forget { // a later command pushes it out of the environment's memory
				p2, err := svc.Start(context.Background(), env.Owner{}, id, env.ExecRequest{Argv: []string{"true"}, Timeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := svc.Wait(context.Background(), env.Owner{}, id, p2); err != nil {
					t.Fatal(err)
				}
			}
			res := daemonDriver(t, dir, svc, id, p, "")
			rec, results := outcomes(t, dir)
			if !slices.Equal(rec, []string{tc.outcome}) {
				t.Fatalf("reconciled %v, want %s", rec, tc.outcome)
			}
			if l := ledgerOf(t, svc, id); l != "run\n" {
				t.Fatalf("ran.log %q: the command ran again", l)
			}
			if tc.forget {
				if res.StopReason != StopPaused || len(results) != 0 {
					t.Fatalf("a forgotten process: %s with results %+v, want paused and none", res.StopReason, results)
				}
				return
			}
			want := strings.TrimPrefix(tc.command, "echo run >> ran.log; echo ")[:5]
			if res.StopReason != StopPolicy || len(results) != 1 || !strings.Contains(results[0].Result.Text, want) {
				t.Fatalf("%s, results %+v: want the recorded output %q once", res.StopReason, results, want)
			}
		})
	}
}

// TestReattachElsewhere: a session resumed in another environment than the
// one its process ran in (a local environment dies with its driver, and the
// resumed session re-derives a new one) keeps the fingerprint rules: the
// recorded workspace did not change, so the call had no effect there, and it
// is decided afresh and run in the new environment.
func TestReattachElsewhere(t *testing.T) {
	svc, first, ws := daemonEnv(t, 0)
	dir := t.TempDir()
	p := byHistory{call("exec.run", map[string]any{"command": "echo run >> ran.log"})}
	if res := daemonDriver(t, dir, svc, first, p, "process-started:5"); res != nil {
		t.Fatalf("the driver did not die: %+v", res)
	}
	info, err := svc.Create(context.Background(), env.CreateOptions{Workspace: ws, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	res := daemonDriver(t, dir, svc, info.ID, p, "")
	rec, _ := outcomes(t, dir)
	if !slices.Equal(rec, []string{trace.OutcomeNotRun}) || res.StopReason != StopPolicy {
		t.Fatalf("reconciled %v, stopped %s: want not_run, then run afresh", rec, res.StopReason)
	}
	if l := ledgerOf(t, svc, info.ID); l != "run\n" {
		t.Fatalf("the new environment's ran.log %q, want one run", l)
	}
}

// TestReattachTaint is an attacker's test of the permission layer across a
// crash: a command whose output carries a credential, read only after its
// driver died, taints the resumed session as it would have tainted the
// driver that started it (a crash must not launder what a call read).
func TestReattachTaint(t *testing.T) {
	svc, id, _ := daemonEnv(t, 0)
	dir := t.TempDir()
	token := "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0dF3gH6"
	p := byHistory{call("exec.run", map[string]any{"command": "while [ ! -e release ]; do sleep 0.05; done; cat release"})}
	if res := daemonDriver(t, dir, svc, id, p, "process-started:5", true); res != nil {
		t.Fatalf("the driver did not die: %+v", res)
	}
	if err := svc.WriteFile(context.Background(), env.Owner{}, id, "release", []byte("token: "+token+"\n")); err != nil {
		t.Fatal(err)
	}
	res := daemonDriver(t, dir, svc, id, p, "", true)
	rec, results := outcomes(t, dir)
	if res == nil || len(rec) != 1 || len(results) != 1 || !strings.Contains(results[0].Result.Text, token) {
		t.Fatalf("%+v: reconciled %v, results %+v", res, rec, results)
	}
	st := loadState(t, dir)
	if !slices.ContainsFunc(st.Taint, func(l taint.Label) bool { return l.Rule == "github-token" && l.Call == "call_1" }) {
		t.Fatalf("the session's taint after the reattached result: %+v, want the token's", st.Taint)
	}
}
