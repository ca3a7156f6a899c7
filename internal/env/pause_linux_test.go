package env

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuOf is the CPU time the environment's cgroup has used so far.
func cpuOf(t *testing.T, e *environment) time.Duration {
	t.Helper()
	st, err := e.ns().Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st.CPUUser + st.CPUSys
}

// TestPauseResume: a paused environment's counting loop stands still and its
// cgroup uses no CPU (a bound on the cgroup's counters, not on wall time); Exec
// and Start are refused with ErrPaused while file operations and Diff work and
// leave it paused; after Resume the same process counts on and its event stream
// goes on. Destroying a paused environment leaves nothing behind.
func TestPauseResume(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	e := envOf(t, m, id)
	f := footprintOf(e)
	proc, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"/bin/sh", "-c",
		`i=0; while :; do i=$((i+1)); echo $i > count.tmp; mv count.tmp count; [ $((i % 50)) -eq 0 ] && echo $i; done`}})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		b, err := m.ReadFile(ctx, alice, id, "count", 0, 0)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	ev, err := m.Events(ctx, alice, id, proc, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	for seq == 0 {
		select {
		case x := <-ev:
			seq = x.Seq
		case <-time.After(time.Minute):
			t.Fatal("no output before the pause")
		}
	}

	info, err := m.Pause(ctx, alice, id, PauseOptions{})
	if err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if info.State != StatePaused || info.PausedAt.IsZero() {
		t.Errorf("Info after Pause: state %q, paused_at %v", info.State, info.PausedAt)
	}
	if _, err := m.Pause(ctx, alice, id, PauseOptions{}); err != nil {
		t.Errorf("Pause again: %v", err)
	}
	n0, cpu0 := count(), cpuOf(t, e)
	if n0 == 0 {
		t.Fatal("no count before the pause")
	}
	if _, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrPaused) {
		t.Errorf("Exec while paused = %v, want ErrPaused", err)
	}
	if _, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrPaused) {
		t.Errorf("Start while paused = %v, want ErrPaused", err)
	}
	if err := m.WriteFile(ctx, alice, id, "while-paused", []byte("x")); err != nil {
		t.Errorf("WriteFile while paused: %v", err)
	}
	if d, err := m.Diff(ctx, alice, id); err != nil || !strings.Contains(string(d), "while-paused") {
		t.Errorf("Diff while paused = %q, %v", d, err)
	}
	// Drain what was emitted before the freeze took hold.
	for drained := false; !drained; {
		select {
		case x := <-ev:
			seq = x.Seq
		case <-time.After(100 * time.Millisecond):
			drained = true
		}
	}
	time.Sleep(300 * time.Millisecond)
	if d := cpuOf(t, e) - cpu0; d > 5*time.Millisecond {
		t.Errorf("the paused environment used %v of CPU", d)
	}
	if n := count(); n != n0 {
		t.Errorf("the counter moved from %d to %d while paused", n0, n)
	}
	select {
	case x := <-ev:
		t.Errorf("event %d (%s %q) while paused", x.Seq, x.Kind, x.Data)
	default:
	}
	if got, _ := m.Get(ctx, alice, id); got.State != StatePaused {
		t.Errorf("state %q after Diff, want still paused", got.State)
	}

	info, err = m.Resume(ctx, alice, id)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if info.State != StateRunning || !info.PausedAt.IsZero() {
		t.Errorf("Info after Resume: state %q, paused_at %v", info.State, info.PausedAt)
	}
	if !settle(func() bool { return count() > n0 }) {
		t.Errorf("the counter did not go on after Resume (still %d)", n0)
	}
	select {
	case x := <-ev:
		if x.Seq != seq+1 || x.Kind != EventStdout {
			t.Errorf("after Resume: event %d %s, want %d stdout", x.Seq, x.Kind, seq+1)
		}
	case <-time.After(time.Minute):
		t.Error("the output stream did not go on after Resume")
	}
	if out := sh(t, m, id, "echo ok"); out != "ok\n" {
		t.Errorf("exec after Resume: %q", out)
	}

	// Destroyed while paused: every process dies, nothing is left.
	if _, err := m.Pause(ctx, alice, id, PauseOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Destroy(ctx, alice, id); err != nil {
		t.Fatalf("Destroy while paused: %v", err)
	}
	if res, err := m.Wait(ctx, alice, id, proc); err == nil {
		t.Logf("background command: %+v", res)
	}
	settle(f.gone)
	f.check(t)
}

// TestTimeoutPause: with OnTimeout "pause" the TTL pauses the environment instead
// of destroying it, and Resume gives it a new TTL; an idle pause pauses an
// environment nobody uses; a paused environment's idle timeout still destroys it.
func TestTimeoutPause(t *testing.T) {
	m := newManager(t, Config{ReapInterval: 10 * time.Millisecond})
	ctx := context.Background()
	state := func(id string) string { i, _ := m.Get(ctx, alice, id); return i.State }

	ttl := create(t, m, CreateOptions{TTL: 200 * time.Millisecond, OnTimeout: OnTimeoutPause})
	if ttl.OnTimeout != OnTimeoutPause {
		t.Errorf("Info.OnTimeout %q", ttl.OnTimeout)
	}
	if !settle(func() bool { return state(ttl.ID) == StatePaused }) {
		t.Fatalf("state %q after the TTL, want paused", state(ttl.ID))
	}
	info, err := m.Resume(ctx, alice, ttl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !info.ExpiresAt.After(time.Now()) {
		t.Errorf("Resume after the TTL: expires at %v, want a new TTL", info.ExpiresAt)
	}

	idle := create(t, m, CreateOptions{IdlePause: 50 * time.Millisecond, Idle: time.Hour})
	if !settle(func() bool { return state(idle.ID) == StatePaused }) {
		t.Fatalf("state %q when idle, want paused", state(idle.ID))
	}
	e := envOf(t, m, idle.ID)
	e.mu.Lock()
	e.idle = time.Millisecond
	e.mu.Unlock()
	if !settle(func() bool { return state(idle.ID) == StateDestroyed }) {
		t.Fatalf("state %q past the idle timeout, want destroyed", state(idle.ID))
	}

	if _, err := m.Create(ctx, CreateOptions{Owner: alice, OnTimeout: "hibernate"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Create with on_timeout hibernate = %v, want ErrInvalid", err)
	}
}
