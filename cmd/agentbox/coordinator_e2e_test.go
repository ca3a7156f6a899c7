package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/sessionapi"
	"github.com/agentbox/agentbox/internal/trace"
)

const coordToken = "coord-token-0123456789abcdef"

// coord is an agentbox coordinator serve subprocess of a test, against the
// environment daemon d.
type coord struct {
	t      *testing.T
	d      *daemon
	state  string
	env    []string // extra environment (AGENTBOX_CRASH_AT) and --flags
	cmd    *exec.Cmd
	exited chan error
	url    string
	log    string
}

// startCoord runs a coordinator on state (reused to restart) and waits until
// it serves: one tenant, its token coordToken, unless env gives --config.
func startCoord(t *testing.T, d *daemon, state string, env ...string) *coord {
	t.Helper()
	dir := filepath.Dir(state)
	envTok, tok := filepath.Join(dir, "env-token"), filepath.Join(dir, "token")
	os.WriteFile(envTok, []byte(e2eToken+"\n"), 0o600)
	os.WriteFile(tok, []byte(coordToken+"\n"), 0o600)
	c := &coord{t: t, d: d, state: state, env: env, log: state + ".log"}
	log, err := os.OpenFile(c.log, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	args := []string{"coordinator", "serve", "--state-dir", state, "--listen", "127.0.0.1:0", "--env-url", "unix:" + d.socket}
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "--config") }) {
		args = append(args, "--env-token-file", envTok, "--token-file", tok)
	}
	c.cmd = exec.Command(agentbox)
	c.cmd.Env = os.Environ()
	for _, e := range env {
		if strings.HasPrefix(e, "--") {
			args = append(args, e)
		} else {
			c.cmd.Env = append(c.cmd.Env, e)
		}
	}
	c.cmd.Args = append(c.cmd.Args, args...)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.exited = make(chan error, 1)
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(c.stop)
	re := regexp.MustCompile(`serving on (http://[0-9.:]+)`)
	if !eventually(time.Minute, func() bool {
		b, _ := os.ReadFile(c.log)
		if m := re.FindSubmatch(b); m != nil {
			c.url = string(m[1])
			return true
		}
		return c.gone()
	}) || c.url == "" {
		b, _ := os.ReadFile(c.log)
		t.Fatalf("the coordinator did not come up:\n%s", b)
	}
	return c
}

// gone reports whether the process has exited (and keeps the report).
func (c *coord) gone() bool {
	select {
	case err := <-c.exited:
		c.exited <- err
		return true
	default:
		return false
	}
}

func (c *coord) client() *sessionapi.Client {
	cl, err := sessionapi.NewClient(c.url, coordToken)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// kill SIGKILLs the coordinator, if it still runs, and waits for its end.
func (c *coord) kill() {
	c.cmd.Process.Kill()
	<-c.exited
	c.exited <- nil
}

func (c *coord) stop() {
	if c.gone() {
		return
	}
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
		c.t.Error("the coordinator did not stop on SIGINT")
	}
	c.exited <- nil
}

// waitState polls the session until cond holds of it.
func (c *coord) waitState(id string, d time.Duration, cond func(coordinator.Info) bool) coordinator.Info {
	c.t.Helper()
	var last coordinator.Info
	var err error
	if !eventually(d, func() bool {
		last, err = c.client().Get(context.Background(), id)
		return err == nil && cond(last)
	}) {
		b, _ := os.ReadFile(c.log)
		c.t.Fatalf("session %s: %+v (%v)\n%s", id, last, err, b)
	}
	return last
}

// sse reads a session's event stream after seq after, sending each event's
// seq and type, until the stream ends or breaks; it returns why.
func (c *coord) sse(ctx context.Context, id string, after int64, got chan<- trace.Event) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+coordToken)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("events: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var id64 int64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id64, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			var e trace.Event
			if err := json.Unmarshal([]byte(line[6:]), &e); err != nil {
				return err
			}
			if e.Seq != id64 {
				return fmt.Errorf("event id %d carries seq %d", id64, e.Seq)
			}
			got <- e
		}
	}
	return sc.Err()
}

// coordWorkspace is the long session's workspace under the daemon's tenant a root.
func coordWorkspace(t *testing.T, d *daemon) string {
	ws := filepath.Join(d.work, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func longSpec(env coordinator.EnvSpec, grants ...string) coordinator.Spec {
	return coordinator.Spec{Goal: "the long task", Policy: coordinator.PolicySpec{Name: "scripted", Mode: "long"},
		Env: env, Ledger: true, TestCommand: []string{"true"}, Grants: grants}
}

func ledgerLinesIn(t *testing.T, state, id string) int {
	b, err := os.ReadFile(filepath.Join(state, "sessions", id, "ledger"))
	if err != nil {
		t.Fatalf("the session's ledger: %v", err)
	}
	return strings.Count(string(b), "\n")
}

// TestCoordKill: failure separation, the coordinator's side. A session
// waiting on an approval (ledger.append, asked) in an environment the test
// made, with a process of the test's running in it, survives a SIGKILL of its
// coordinator: the environment and the process stay up in the daemon; the
// restarted coordinator resumes the session (RecoverySummary before any new
// action) and waits for the answer again; an event stream reconnected with
// Last-Event-ID across the restart gets every event once, in order; the
// approval given over the API unblocks the session, which finishes with the
// uninterrupted run's workspace and one ledger entry.
func TestCoordKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and coordinators")
	}
	d := startDaemon(t, t.TempDir())
	ec := d.client(e2eToken)
	ctx := context.Background()
	ws := coordWorkspace(t, d)

	// The uninterrupted run, with the ledger granted: nothing to ask.
	refState := filepath.Join(t.TempDir(), "state")
	ref := startCoord(t, d, refState)
	r, err := ref.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	want := ref.waitState(r.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	if want.StopReason != "done" || want.Diff == "" || ledgerLinesIn(t, refState, r.ID) != 1 {
		t.Fatalf("the uninterrupted run: %+v", want)
	}
	if !eventually(10*time.Second, func() bool {
		i, err := ec.Get(ctx, want.EnvID)
		return client.IsCode(err, client.CodeNotFound) || i.State == "destroyed"
	}) {
		t.Error("the environment the coordinator made outlived its ended session")
	}
	ref.stop()

	// The environment is the test's, with a process of its own in it.
	e, err := ec.Create(ctx, client.CreateRequest{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "echo $$ > /tmp/bg.pid; exec sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	bgAlive := func() bool {
		res, err := ec.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "kill -0 $(cat /tmp/bg.pid)"}})
		return err == nil && res.ExitCode == 0
	}
	if !eventually(10*time.Second, bgAlive) {
		t.Fatal("the background process did not start")
	}
	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state)
	s, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{ID: e.ID}))
	if err != nil {
		t.Fatal(err)
	}
	asked := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return len(i.Awaiting) == 1 })
	req := asked.Awaiting[0].Request.ID

	got := make(chan trace.Event, 4096)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streamErr := make(chan error, 1)
	go func() { streamErr <- c.sse(sctx, s.ID, 0, got) }()
	var seen []trace.Event
	for len(seen) == 0 || seen[len(seen)-1].Seq < asked.Seq {
		select {
		case ev := <-got:
			seen = append(seen, ev)
		case err := <-streamErr:
			t.Fatalf("the stream ended before seq %d: %v", asked.Seq, err)
		case <-time.After(time.Minute):
			t.Fatalf("the stream stopped at %d events", len(seen))
		}
	}
	c.kill()
	<-streamErr // the stream breaks with its coordinator
	for len(got) > 0 {
		seen = append(seen, <-got)
	}
	if i, err := ec.Get(ctx, e.ID); err != nil || i.State != "running" || !bgAlive() {
		t.Fatalf("the environment after the coordinator's SIGKILL: %+v %v (background process alive: %v)", i, err, bgAlive())
	}

	t0 := time.Now()
	c = startCoord(t, d, state)
	go func() { streamErr <- c.sse(sctx, s.ID, seen[len(seen)-1].Seq, got) }()
	c.waitState(s.ID, time.Minute, func(i coordinator.Info) bool { return i.Recoveries >= 1 && len(i.Awaiting) == 1 })
	t.Logf("coordinator start to the session recovered and waiting again: %s", time.Since(t0).Round(time.Millisecond))
	a, err := c.client().Answer(ctx, s.ID, req, true, "")
	if err != nil || a.Request.ID != req || !a.Answer.Once {
		t.Fatalf("approve over the API: %+v %v", a, err)
	}
	if _, err := c.client().Answer(ctx, s.ID, req, false, ""); !client.IsCode(err, client.CodeConflict) {
		t.Errorf("a second answer: %v", err)
	}
	fin := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	if err := <-streamErr; err != nil {
		t.Fatalf("the reconnected stream: %v", err)
	}
	for len(got) > 0 {
		seen = append(seen, <-got)
	}
	if fin.StopReason != "done" || fin.Diff != want.Diff || ledgerLinesIn(t, state, s.ID) != 1 {
		t.Fatalf("after the restart: %s (%s), ledger %d, diff equal %v\n%s\nwant\n%s", fin.StopReason, fin.Detail,
			ledgerLinesIn(t, state, s.ID), fin.Diff == want.Diff, fin.Diff, want.Diff)
	}
	// Every event once, in order, across the restart; recovery before any new action.
	if int64(len(seen)) != fin.Seq {
		t.Fatalf("the streams carried %d events, the journal holds %d", len(seen), fin.Seq)
	}
	recovering := false
	resolved := false
	for i, ev := range seen {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: lost or duplicated across the restart", i+1, ev.Seq)
		}
		switch ev.Type {
		case trace.RecoveryStarted:
			recovering = true
		case trace.RecoverySummary:
			recovering = false
		case trace.ApprovalResolved:
			resolved = true
		default:
			if recovering && ev.Type != trace.RecoveryReconciled {
				t.Errorf("event %d (%s) between RecoveryStarted and RecoverySummary", ev.Seq, ev.Type)
			}
		}
	}
	if !resolved {
		t.Error("no ApprovalResolved in the journal")
	}
	// A watermark beyond the journal: the state first, then nothing more (it ended).
	req2, _ := http.NewRequest("GET", c.url+"/v1/sessions/"+s.ID+"/events", nil)
	req2.Header.Set("Authorization", "Bearer "+coordToken)
	req2.Header.Set("Last-Event-ID", strconv.FormatInt(fin.Seq+100, 10))
	if resp, err := http.DefaultClient.Do(req2); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), fmt.Sprintf("id: %d\nevent: state\n", fin.Seq)) || strings.Count(string(b), "\nevent: ") != 1 {
			t.Errorf("a watermark beyond the journal's end:\n%s", b)
		}
	}
	if i, err := ec.Get(ctx, e.ID); err != nil || i.State != "running" || !bgAlive() {
		t.Errorf("the test's environment after the session: %+v %v", i, err)
	}
}

// TestCoordEnvKill: failure separation, the environment's side. The
// environment daemon is SIGKILLed while a session's test.run runs in it: the
// coordinator keeps serving (its API, its other commands), and the call in
// flight gets a result in the journal, a failure, rather than being lost; the
// sessions CLI reaches the coordinator, and cancel ends the session. A session
// created while the daemon is down waits for it and runs once it is back.
func TestCoordEnvKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and a coordinator")
	}
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state)
	spec := longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append")
	spec.TestCommand = []string{"sleep", "120"}
	s, err := c.client().Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan trace.Event, 4096)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streamErr := make(chan error, 1)
	go func() { streamErr <- c.sse(sctx, s.ID, 0, got) }()
	next := func(what string, cond func(trace.Event) bool) trace.Event {
		t.Helper()
		for {
			select {
			case ev := <-got:
				if cond(ev) {
					return ev
				}
			case err := <-streamErr:
				t.Fatalf("the stream ended before %s: %v", what, err)
			case <-time.After(2 * time.Minute):
				t.Fatalf("no %s", what)
			}
		}
	}
	started := next("test.run's start", func(ev trace.Event) bool {
		var st trace.ToolStart
		return ev.Type == trace.ToolExecutionStarted && json.Unmarshal(ev.Data, &st) == nil && st.Tool == "test.run"
	})
	time.Sleep(200 * time.Millisecond) // the command is running in the sandbox
	d.kill()

	fin := next("test.run's result", func(ev trace.Event) bool {
		return ev.Type == trace.ToolExecutionFinished && ev.CallID == started.CallID
	})
	var f trace.ToolFinish
	if err := json.Unmarshal(fin.Data, &f); err != nil || f.Result.OK || f.DurationMS < 150 || !strings.Contains(f.Internal, "/exec") {
		t.Fatalf("the call in flight when the daemon died: %s (%v)", fin.Data, err)
	}
	// The coordinator serves on: its API, and the CLI through it.
	if _, err := c.client().Get(ctx, s.ID); err != nil {
		t.Fatalf("the coordinator after the daemon's death: %v", err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "AGENTBOX_COORDINATOR_TOKEN=" + coordToken}
	out, errOut, st := run(t, env, "sessions", "ls", "--coordinator", c.url)
	if st != 0 || !strings.Contains(out, s.ID) {
		t.Fatalf("sessions ls: %d\n%s\n%s", st, out, errOut)
	}
	if out, errOut, st = run(t, env, "sessions", "show", s.ID, "--coordinator", c.url); st != 0 || !strings.Contains(out, `"id": "`+s.ID+`"`) {
		t.Fatalf("sessions show: %d\n%s\n%s", st, out, errOut)
	}
	// The session may end by itself (its driver saw the daemon go) between
	// the state read and the cancel: then the cancel is the 409 of an ended one.
	i, _ := c.client().Get(ctx, s.ID)
	if i.State != coordinator.StateEnded {
		out, errOut, st = run(t, env, "sessions", "cancel", s.ID, "--coordinator", c.url)
		raced := st != 0 && strings.Contains(errOut, "the session has ended")
		if i, _ = c.client().Get(ctx, s.ID); raced && i.State == coordinator.StateEnded {
			t.Logf("the session ended (%s) before the cancel", i.StopReason)
		} else if st != 0 || !strings.Contains(out, "ended cancelled") {
			t.Fatalf("sessions cancel: %d\n%s\n%s", st, out, errOut)
		}
	}
	if _, errOut, st = run(t, []string{"PATH=" + os.Getenv("PATH")}, "sessions", "ls", "--coordinator", c.url); st == 0 ||
		!strings.Contains(errOut, "AGENTBOX_COORDINATOR_TOKEN") {
		t.Errorf("sessions ls without a token: %d %s", st, errOut)
	}
	// A session created while the daemon is down waits for it, and runs once it is back.
	w, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	if w = c.waitState(w.ID, time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateWaiting }); !strings.Contains(w.Error, "no agentbox daemon") {
		t.Errorf("a session without its daemon: %+v", w)
	}
	d.start() // reaps what the killed daemon left
	if f := c.waitState(w.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded }); f.StopReason != "done" || f.Error != "" {
		t.Errorf("the waiting session once the daemon is back: %+v", f)
	}
}

// TestCoordCrashEffect: the coordinator is killed inside the one
// non-idempotent call (AGENTBOX_CRASH_AT=effect-after: ledger.append made its
// entry, its result not recorded). The restarted coordinator resumes the
// session in the same environment and does not guess: the call is unknown and
// the session pauses; a person resolves it (sessions resolve on the
// coordinator's session directory), and after the next restart the session
// finishes with the uninterrupted run's workspace and exactly one ledger entry.
func TestCoordCrashEffect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and coordinators")
	}
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	refState := filepath.Join(t.TempDir(), "state")
	ref := startCoord(t, d, refState)
	r, err := ref.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	want := ref.waitState(r.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	got := make(chan trace.Event, 4096)
	if err := ref.sse(ctx, r.ID, 0, got); err != nil {
		t.Fatal(err)
	}
	ref.stop()
	var ledgerAt int64
	for len(got) > 0 && ledgerAt == 0 {
		ev := <-got
		var st trace.ToolStart
		if ev.Type == trace.ToolExecutionStarted && json.Unmarshal(ev.Data, &st) == nil && st.Tool == "ledger.append" {
			ledgerAt = ev.Seq
		}
	}
	if want.StopReason != "done" || ledgerAt == 0 {
		t.Fatalf("the uninterrupted run: %+v, ledger.append at %d", want, ledgerAt)
	}

	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state, fmt.Sprintf("AGENTBOX_CRASH_AT=effect-after:%d", ledgerAt))
	s, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(3*time.Minute, c.gone) {
		t.Fatal("the coordinator did not reach its crash point")
	}
	if n := ledgerLinesIn(t, state, s.ID); n != 1 {
		t.Fatalf("the ledger before the restart: %d entries", n)
	}
	c = startCoord(t, d, state)
	p := c.waitState(s.ID, time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StatePaused })
	if len(p.Unknown) != 1 || ledgerLinesIn(t, state, s.ID) != 1 {
		t.Fatalf("after the restart: %+v, ledger %d", p, ledgerLinesIn(t, state, s.ID))
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "AGENTBOX_COORDINATOR_TOKEN=" + coordToken}
	if _, err := c.client().Resolve(ctx, s.ID, "call_0", "succeeded", ""); !client.IsCode(err, client.CodeInvalid) || !strings.Contains(err.Error(), p.Unknown[0]) {
		t.Errorf("resolve a call that is not unknown: %v", err)
	}
	if out, errOut, st := run(t, env, "sessions", "resolve", s.ID, p.Unknown[0], "--as", "succeeded", "--coordinator", c.url); st != 0 {
		t.Fatalf("sessions resolve --coordinator: %d\n%s\n%s", st, out, errOut)
	}
	fin := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	if fin.StopReason != "done" || fin.Diff != want.Diff || ledgerLinesIn(t, state, s.ID) != 1 || fin.Recoveries < 2 {
		t.Fatalf("after resolving: %s (%s), ledger %d, recoveries %d, diff equal %v", fin.StopReason, fin.Detail,
			ledgerLinesIn(t, state, s.ID), fin.Recoveries, fin.Diff == want.Diff)
	}
}

// TestCoordApprovalsAndCancel: approvals mode pause (the session pauses, an
// answer through the CLI starts its driver again), cancel of a waiting and of
// a paused session (ended cancelled, or cancelled and never resumed; the
// environment the coordinator made destroyed either way), and a graceful stop
// of the coordinator (SIGINT), which leaves a waiting session unended for the
// next start.
func TestCoordApprovalsAndCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and coordinators")
	}
	d := startDaemon(t, t.TempDir())
	ec := d.client(e2eToken)
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state)
	create := func(approvals string) coordinator.Info {
		t.Helper()
		sp := longSpec(coordinator.EnvSpec{Workspace: ws})
		sp.Approvals = approvals
		i, err := c.client().Create(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		return c.waitState(i.ID, 3*time.Minute, func(i coordinator.Info) bool { return len(i.Awaiting) == 1 })
	}
	envGone := func(id string) bool { // the driver destroys it just after the session's end
		return eventually(10*time.Second, func() bool {
			i, err := ec.Get(ctx, id)
			return client.IsCode(err, client.CodeNotFound) || i.State == "destroyed"
		})
	}
	paused, waiting, pausedCancel, detached := create("pause"), create("wait"), create("pause"), create("wait")
	if p := c.waitState(paused.ID, time.Minute, func(i coordinator.Info) bool { return i.State != coordinator.StateRunning }); p.State != coordinator.StatePaused {
		t.Fatalf("approvals pause: %+v", p)
	}
	if w, _ := c.client().Get(ctx, waiting.ID); w.State != coordinator.StateRunning {
		t.Fatalf("approvals wait: %+v", w)
	}

	env := []string{"PATH=" + os.Getenv("PATH"), "AGENTBOX_COORDINATOR_TOKEN=" + coordToken}
	if out, errOut, st := run(t, env, "sessions", "approve", paused.ID, paused.Awaiting[0].Request.ID, "--coordinator", c.url); st != 0 ||
		!strings.Contains(out, "allowed for this call") {
		t.Fatalf("sessions approve --coordinator: %d\n%s\n%s", st, out, errOut)
	}
	if f := c.waitState(paused.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded }); f.StopReason != "done" ||
		ledgerLinesIn(t, state, paused.ID) != 1 {
		t.Fatalf("the paused session after its answer: %+v", f)
	}

	if i, err := c.client().Cancel(ctx, waiting.ID); err != nil || i.State != coordinator.StateEnded || i.StopReason != "cancelled" || !envGone(i.EnvID) {
		t.Fatalf("cancel a waiting session: %+v %v", i, err)
	}
	if _, err := c.client().Cancel(ctx, waiting.ID); !client.IsCode(err, client.CodeConflict) {
		t.Errorf("cancel an ended session: %v", err)
	}
	c.waitState(pausedCancel.ID, time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StatePaused })
	pc, err := c.client().Cancel(ctx, pausedCancel.ID)
	if err != nil || pc.State != coordinator.StateCancelled || !envGone(pc.EnvID) {
		t.Fatalf("cancel a paused session: %+v %v", pc, err)
	}

	c.stop() // SIGINT: the waiting session is let go, not ended
	c = startCoord(t, d, state)
	if i, _ := c.client().Get(ctx, pausedCancel.ID); i.State != coordinator.StateCancelled || i.Epoch != pc.Epoch {
		t.Errorf("a cancelled session after a restart: %+v (epoch was %d)", i, pc.Epoch)
	}
	dt := c.waitState(detached.ID, time.Minute, func(i coordinator.Info) bool { return i.Recoveries >= 1 && len(i.Awaiting) == 1 })
	if dt.State != coordinator.StateRunning || dt.EnvID != detached.EnvID {
		t.Fatalf("the waiting session after a graceful stop: %+v", dt)
	}
	if _, err := c.client().Answer(ctx, detached.ID, dt.Awaiting[0].Request.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	if f := c.waitState(detached.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded }); f.StopReason != "done" ||
		ledgerLinesIn(t, state, detached.ID) != 1 || !envGone(f.EnvID) {
		t.Fatalf("the detached session after its answer: %+v", f)
	}
}

// TestCoordKeyStays: the model key is the coordinator's. A hosted session
// whose model (a scripted Anthropic endpoint on loopback) runs env and then
// echoes the key in the sandbox: the endpoint received the key, the sandbox's
// environment did not hold it, and neither the event stream, the session's
// state, the coordinator's journal files nor the daemon's log hold it.
func TestCoordKeyStays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and a coordinator")
	}
	const key = "sk-ant-planted-0123456789abcdef"
	srv := modeltest.NewAnthropic(t,
		modeltest.Turn{Calls: []modeltest.Call{{Name: "exec_run", Args: `{"command":"env"}`}}},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "exec_run", Args: `{"command":"echo ` + key + `"}`}}},
		modeltest.Turn{Text: "stopping"})
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state, "ANTHROPIC_API_KEY="+key, "--base-url="+srv.URL)
	s, err := c.client().Create(ctx, coordinator.Spec{Goal: "look around", Env: coordinator.EnvSpec{Workspace: ws},
		Policy: coordinator.PolicySpec{Name: "anthropic", Model: "claude-test"}})
	if err != nil {
		t.Fatal(err)
	}
	fin := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	if len(srv.Received()) != 3 || srv.Received()[0].Header.Get("X-Api-Key") != key {
		t.Fatalf("the model endpoint: %d requests; session %+v", len(srv.Received()), fin)
	}
	got := make(chan trace.Event, 4096)
	if err := c.sse(ctx, s.ID, 0, got); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for len(got) > 0 {
		b, _ := json.Marshal(<-got)
		all.Write(b)
	}
	if !strings.Contains(all.String(), "PATH=") || !strings.Contains(all.String(), "[redacted]") {
		t.Fatalf("the events do not show the commands' output: the test would prove nothing\n%s", all.String())
	}
	if strings.Contains(all.String(), "ANTHROPIC_API_KEY") {
		t.Error("the sandbox's environment names the key's variable")
	}
	b, _ := json.Marshal(fin)
	logb, _ := os.ReadFile(d.log.Name())
	for what, text := range map[string]string{"the events": all.String(), "the session": string(b), "the daemon's log": string(logb)} {
		if strings.Contains(text, key) {
			t.Errorf("the key is in %s", what)
		}
	}
	c.stop()
	filepath.WalkDir(state, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("the key is in the coordinator's %s", p)
			}
		}
		return nil
	})
}

// TestCoordRandomKills: the coordinator SIGKILLed by the test at random
// points of a running long session (whatever it is doing then), restarted,
// as many times as it takes. Each session must end done with the
// uninterrupted run's workspace and one ledger entry, or pause with its
// unknown calls named and at most one entry (never two): unknown is legal,
// a guess is not. A paused session's ledger.append is resolved from the
// ledger, as a person would, and the session goes on.
func TestCoordRandomKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and many coordinators")
	}
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	refState := filepath.Join(t.TempDir(), "state")
	ref := startCoord(t, d, refState)
	r, err := ref.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	want := ref.waitState(r.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	ref.stop()
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("AGENTBOX_KILL_SEED"), 10, 64); err == nil {
		seed = v // to replay a run
	}
	t.Logf("kill points from seed %d (AGENTBOX_KILL_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	const runs = 6
	var kills, done, paused int
	for run := range runs {
		state := filepath.Join(t.TempDir(), "state")
		c := startCoord(t, d, state)
		s, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
		if err != nil {
			t.Fatal(err)
		}
		var fin coordinator.Info
		for round := 0; ; round++ {
			if round > 20 {
				t.Fatalf("run %d: no end after %d kills", run, round)
			}
			at := want.Seq * int64(5+rng.IntN(90)) / 100
			if round > 0 || !eventually(2*time.Minute, func() bool {
				i, err := c.client().Get(ctx, s.ID)
				return err == nil && (i.Seq >= at || i.State != coordinator.StateRunning)
			}) {
				// Later rounds run to their end or pause.
			} else if i, _ := c.client().Get(ctx, s.ID); i.State == coordinator.StateRunning {
				c.kill()
				kills++
				t.Logf("run %d: killed at seq ≥ %d (%d)", run, at, i.Seq)
				c = startCoord(t, d, state)
			}
			fin = c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool {
				return i.State == coordinator.StateEnded || i.State == coordinator.StatePaused
			})
			if n := ledgerLinesInMaybe(state, s.ID); n > 1 {
				t.Fatalf("run %d: %d ledger entries: a non-idempotent effect repeated", run, n)
			}
			if fin.State == coordinator.StateEnded {
				break
			}
			paused++
			t.Logf("run %d: paused, unknown %v", run, fin.Unknown)
			for _, call := range fin.Unknown {
				// What a person checks: the ledger for ledger.append; for a
				// workspace call, whether the workspace moved from the call's
				// pre-state (recovery's verdict names both).
				r := reconciled(t, c, s.ID, call)
				as := "failed"
				if (r.Tool == "ledger.append" && ledgerLinesInMaybe(state, s.ID) == 1) || (r.Tool != "ledger.append" && r.Found != r.Pre) {
					as = "succeeded"
				}
				t.Logf("run %d: %s (%s) resolved as %s", run, call, r.Tool, as)
				if _, err := c.client().Resolve(ctx, s.ID, call, as, "checked by the test"); err != nil {
					t.Fatalf("run %d: resolve %s: %v", run, call, err)
				}
			}
		}
		if fin.Diff != want.Diff {
			got := make(chan trace.Event, 8192)
			c.sse(ctx, s.ID, 0, got)
			for len(got) > 0 {
				e := <-got
				if e.CallID != "" || strings.HasPrefix(string(e.Type), "Recovery") {
					t.Logf("event %d %s %s %.300s", e.Seq, e.Type, e.CallID, e.Data)
				}
			}
			t.Logf("got diff\n%s\nwant\n%s", fin.Diff, want.Diff)
		}
		if fin.StopReason != "done" || fin.Diff != want.Diff || ledgerLinesInMaybe(state, s.ID) != 1 {
			t.Fatalf("run %d: %s (%s), ledger %d, same diff %v", run, fin.StopReason, fin.Detail, ledgerLinesInMaybe(state, s.ID), fin.Diff == want.Diff)
		}
		done++
		c.stop()
	}
	t.Logf("%d runs, %d kills, %d converged, %d pauses for a person, duplicates 0", runs, kills, done, paused)
}

// reconciled is recovery's last verdict on a call of a paused session, read
// from its event stream (which stays open while the session is paused).
func reconciled(t *testing.T, c *coord, id, call string) trace.Reconcile {
	t.Helper()
	i, err := c.client().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := make(chan trace.Event, 8192)
	go c.sse(ctx, id, 0, evs)
	var r trace.Reconcile
	for {
		e := <-evs
		if e.Type == trace.RecoveryReconciled && e.CallID == call {
			json.Unmarshal(e.Data, &r)
		}
		if e.Seq >= i.Seq {
			return r
		}
	}
}

func ledgerLinesInMaybe(state, id string) int {
	b, _ := os.ReadFile(filepath.Join(state, "sessions", id, "ledger"))
	return strings.Count(string(b), "\n")
}

// TestCoordEnvRestart: the environment daemon is SIGKILLed and restarted
// while a session waits for an approval, and the session's environment is lost
// with it (its state record removed, as a lost state disk would: a daemon
// restores the environments whose records it finds, see TestRestartEvents);
// the restarted daemon reaps what is left of it, and the coordinator, which served on, resumes the
// session in a new environment re-derived from its journal: it waits for the
// answer again, and once approved finishes with the uninterrupted run's
// workspace and one ledger entry.
func TestCoordEnvRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and restarts an environment daemon")
	}
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state)
	r, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}, "tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	want := c.waitState(r.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	s, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}))
	if err != nil {
		t.Fatal(err)
	}
	asked := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return len(i.Awaiting) == 1 })
	d.kill()
	if _, err := c.client().Get(ctx, s.ID); err != nil {
		t.Fatalf("the coordinator without its daemon: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(d.state, "envs", asked.EnvID)); err != nil {
		t.Fatal(err)
	}
	d.start()
	again := c.waitState(s.ID, time.Minute, func(i coordinator.Info) bool {
		return i.Recoveries >= 1 && len(i.Awaiting) == 1 && i.EnvID != asked.EnvID && i.State == coordinator.StateRunning
	})
	if _, err := c.client().Answer(ctx, s.ID, again.Awaiting[0].Request.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	fin := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	if fin.StopReason != "done" || fin.Diff != want.Diff || ledgerLinesIn(t, state, s.ID) != 1 {
		t.Fatalf("after the daemon's restart: %s (%s), ledger %d, same diff %v", fin.StopReason, fin.Detail, ledgerLinesIn(t, state, s.ID), fin.Diff == want.Diff)
	}
}

// TestCoordSteer: a steer left through the coordinator (sessions steer
// --coordinator, the API's steer) reaches a paused session: its driver is
// started, takes the supplement (GoalRevised in the journal, the goal's
// revision 1), holds the call it was paused in again, and finishes once
// approved. A steer of an ended session is refused with 409.
func TestCoordSteer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and a coordinator")
	}
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	state := filepath.Join(t.TempDir(), "state")
	c := startCoord(t, d, state)
	sp := longSpec(coordinator.EnvSpec{Workspace: ws})
	sp.Approvals = coordinator.ApprovalsPause
	s, err := c.client().Create(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	p := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StatePaused && len(i.Awaiting) == 1 })
	env := []string{"PATH=" + os.Getenv("PATH"), "AGENTBOX_COORDINATOR_TOKEN=" + coordToken}
	if out, errOut, st := run(t, env, "sessions", "steer", s.ID, "--kind", "supplement", "--message", "also keep README as it is",
		"--coordinator", c.url); st != 0 || !strings.Contains(out, "steer 1 (supplement)") {
		t.Fatalf("sessions steer --coordinator: %d\n%s\n%s", st, out, errOut)
	}
	again := c.waitState(s.ID, time.Minute, func(i coordinator.Info) bool {
		return i.Seq > p.Seq && i.State == coordinator.StatePaused && len(i.Awaiting) == 1
	})
	revised := false
	evs := make(chan trace.Event, 8192)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	go c.sse(sctx, s.ID, p.Seq, evs)
	for !revised {
		select {
		case e := <-evs:
			revised = e.Type == trace.GoalRevised && strings.Contains(string(e.Data), "also keep README")
		case <-sctx.Done():
			t.Fatal("no GoalRevised with the steer's message in the journal")
		}
	}
	if _, err := c.client().Answer(ctx, s.ID, again.Awaiting[0].Request.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	fin := c.waitState(s.ID, 3*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded })
	if fin.StopReason != "done" || ledgerLinesIn(t, state, s.ID) != 1 {
		t.Fatalf("after the steer: %+v", fin)
	}
	if _, err := c.client().Steer(ctx, s.ID, "ask", "still there?"); !client.IsCode(err, client.CodeConflict) {
		t.Errorf("a steer of an ended session: %v", err)
	}
	if _, err := c.client().Steer(ctx, s.ID, "shout", "x"); !client.IsCode(err, client.CodeConflict) && !client.IsCode(err, client.CodeInvalid) {
		t.Errorf("a steer of another kind: %v", err)
	}
}
