package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/runner"
)

// TestConcurrentCommands: commands of one environment run at the same time: each
// waits for all to have started (a barrier in the workspace), which commands run
// one after another never pass.
func TestConcurrentCommands(t *testing.T) {
	m := newManager(t, Config{})
	id := create(t, m, CreateOptions{}).ID
	const n = 5
	var wg sync.WaitGroup
	outs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := m.Exec(context.Background(), alice, id, ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf(barrier, i, n) + fmt.Sprintf("echo %d > f%d; cat f%d", i, i, i)}})
			if err == nil {
				outs[i] = res.Stdout
			}
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != fmt.Sprintf("%d\n", i) {
			t.Errorf("command %d: %q", i, o)
		}
	}
}

// barrier is a shell prologue (Sprintf with the command's number and the number of
// commands) that waits until that many commands have reached it, or prints
// "alone" after 60 s and exits.
const barrier = `touch started-%d; n=0; while [ $(ls started-* | wc -l) -lt %d ]; do n=$((n+1)); [ $n -gt 6000 ] && { echo alone; exit 1; }; sleep 0.01; done; `

// collect reads events until the channel closes.
func collect(t *testing.T, ch <-chan Event) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatal("events did not end")
		}
	}
}

func stdoutOf(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == EventStdout {
			b.Write(ev.Data)
		}
	}
	return b.String()
}

// TestBackground: a started command streams its output as numbered events; a
// client that resumes after event N gets N+1 onwards, without loss or duplicate;
// Wait returns the same Result as the exit event.
func TestBackground(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	pid, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "for i in 1 2 3 4 5; do echo line $i; sleep 0.05; done; echo err >&2; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := m.Events(ctx, alice, id, pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := collect(t, ch)
	if len(all) < 3 || all[len(all)-1].Kind != EventExit || all[len(all)-1].Result.ExitCode != 7 {
		t.Fatalf("events %+v", all)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if got := stdoutOf(all); got != "line 1\nline 2\nline 3\nline 4\nline 5\n" {
		t.Fatalf("stdout events %q", got)
	}
	// Resume after the second event.
	ch, _ = m.Events(ctx, alice, id, pid, 2)
	rest := collect(t, ch)
	if len(rest) != len(all)-2 || rest[0].Seq != 3 || stdoutOf(all[:2])+stdoutOf(rest) != stdoutOf(all) {
		t.Fatalf("resumed events %+v", rest)
	}
	res, err := m.Wait(ctx, alice, id, pid)
	if err != nil || res.ExitCode != 7 || res.Stderr != "err\n" {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if _, err := m.Wait(ctx, alice, id, "p999"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Wait unknown = %v", err)
	}
}

// TestStdinAndSignal: stdin fed in pieces reaches the command; a signal reaches
// every process of the command; ctx bounds Wait.
func TestStdinAndSignal(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	pid, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"cat"}, Stdin: []byte("first ")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteStdin(ctx, alice, id, pid, []byte("second"), true); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Wait(ctx, alice, id, pid); err != nil || res.Stdout != "first second" {
		t.Fatalf("cat: %+v, %v", res, err)
	}
	if err := m.WriteStdin(ctx, alice, id, pid, []byte("late"), false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WriteStdin after the end = %v", err)
	}

	pid, err = m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c",
		"trap 'echo got-term; wait; exit 3' TERM; (trap 'echo bg-term; exit 0' TERM; while :; do sleep 0.01; done) & while :; do sleep 0.01; done"}})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := m.Wait(short, alice, id, pid); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a short ctx = %v", err)
	}
	if err := m.Signal(ctx, alice, id, pid, "TERM"); err != nil {
		t.Fatal(err)
	}
	res, err := m.Wait(ctx, alice, id, pid)
	if err != nil || res.ExitCode != 3 || !strings.Contains(res.Stdout, "got-term") || !strings.Contains(res.Stdout, "bg-term") {
		t.Fatalf("after TERM: %+v, %v", res, err)
	}
	if err := m.Signal(ctx, alice, id, pid, "NOPE"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown signal = %v", err)
	}
}

// TestTimeoutKillsOnlyItsTree: a command's timeout ends its processes, and
// nothing of a background command of the same environment.
func TestTimeoutKillsOnlyItsTree(t *testing.T) {
	m := newManager(t, Config{})
	timeoutKillsOnlyItsTree(t, m, create(t, m, CreateOptions{}).ID, "KILL")
}

// timeoutKillsOnlyItsTree checks in environment id that a timed-out command's
// tree ends, daemons included, and a background command lives on until sig. It
// returns the timed-out command's result.
func timeoutKillsOnlyItsTree(t *testing.T, m *Manager, id, sig string) *runner.Result {
	t.Helper()
	ctx := context.Background()
	bg, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "sleep 777 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "sleep 888 & setsid sleep 889 & sleep 999"}, Timeout: 500 * time.Millisecond})
	if err != nil || !res.TimedOut || res.Limit != runner.LimitTimeout || res.Survivors != 0 {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	ps := sh(t, m, id, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done`)
	if !strings.Contains(ps, "sleep 777") {
		t.Errorf("the background command died with the timed-out one:\n%s", ps)
	}
	for _, gone := range []string{"sleep 888", "sleep 889", "sleep 999"} {
		if strings.Contains(ps, gone) {
			t.Errorf("%s survived the timeout:\n%s", gone, ps)
		}
	}
	if err := m.Signal(ctx, alice, id, bg, sig); err != nil {
		t.Fatal(err)
	}
	if bgRes, err := m.Wait(ctx, alice, id, bg); err != nil || bgRes.Signal == nil || *bgRes.Signal != "SIG"+sig {
		t.Fatalf("background after %s: %+v, %v", sig, bgRes, err)
	}
	return res
}

// TestOutputArtifacts: a stream whose capture was truncated is stored whole as an
// artifact of the caller, whether it spilled to a file (past spillMemory) or
// not; one that fit is not; nothing is left in the environment's directory.
func TestOutputArtifacts(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	for _, c := range []struct {
		name, cmd, last string
	}{{"spilled", "seq 1 50000", "\n49999\n50000\n"}, {"in memory", "seq 1 500", "\n499\n500\n"}} {
		res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", c.cmd + "; echo small >&2"}, OutputLimit: 1000})
		if err != nil || !res.StdoutTruncated || res.StdoutRef == "" || res.StderrRef != "" || res.Stderr != "small\n" {
			t.Fatalf("%s: Exec = %+v, %v", c.name, res, err)
		}
		b, a, err := m.ReadArtifact(ctx, alice, res.StdoutRef, 0, 0)
		if err != nil || int64(len(b)) != res.StdoutBytes || !strings.HasPrefix(string(b), "1\n2\n") || !strings.HasSuffix(string(b), c.last) || a.Owner != alice || a.EnvID != id {
			t.Fatalf("%s: artifact: %d bytes %+v %v", c.name, len(b), a, err)
		}
		if _, _, err := m.ReadArtifact(ctx, bob, res.StdoutRef, 0, 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: bob reads alice's output: %v", c.name, err)
		}
	}
	left, err := os.ReadDir(envOf(t, m, id).dir)
	if err != nil || len(left) != 1 || left[0].Name() != recordName { // the record stays
		t.Fatalf("left in the environment's directory: %v %v", left, err)
	}
}

// TestInitDeath: when an environment's init dies on its own (here SIGKILLed from
// the host; the OOM killer could pick it), the environment is destroyed and its
// owner hears ErrDestroyed, not internal errors.
func TestInitDeath(t *testing.T) {
	m := newManager(t, Config{})
	id := create(t, m, CreateOptions{}).ID
	f := footprintOf(envOf(t, m, id))
	if err := syscall.Kill(envOf(t, m, id).ns().Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !settle(func() bool { info, _ := m.Get(context.Background(), alice, id); return info.State == StateDestroyed }) {
		t.Fatal("the environment of a dead init is still running")
	}
	if _, err := m.Exec(context.Background(), alice, id, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Exec = %v", err)
	}
	// The state says destroyed as soon as the teardown starts; the teardown itself
	// (cgroup, upper layer, reservation) finishes a moment later.
	settle(f.gone)
	f.check(t)
}

// TestManyEnvironments: clients working in environments of their own at the same
// time (create, commands, files, destroy) see no error, and nothing is left.
func TestManyEnvironments(t *testing.T) {
	m := newManager(t, Config{})
	const clients = 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	var prints sync.Map
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			owner := Owner{Tenant: fmt.Sprintf("tenant-%d", c%3)}
			info, err := m.Create(ctx, CreateOptions{Owner: owner, Limits: Limits{Memory: 256 << 20, Pids: 128}})
			if err != nil {
				errs <- err
				return
			}
			m.mu.Lock()
			prints.Store(info.ID, footprintOf(m.envs[info.ID]))
			m.mu.Unlock()
			for i := range 5 {
				name := fmt.Sprintf("f%d", i)
				if err := m.WriteFile(ctx, owner, info.ID, name, []byte(name)); err != nil {
					errs <- err
					return
				}
				res, err := m.Exec(ctx, owner, info.ID, ExecRequest{Argv: []string{"cat", name}})
				if err != nil || res.Stdout != name {
					errs <- fmt.Errorf("exec: %+v %v", res, err)
					return
				}
			}
			if err := m.Destroy(ctx, owner, info.ID); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	prints.Range(func(_, f any) bool {
		f.(footprint).check(t)
		return true
	})
}

// TestTerminal: a command started with a TTY is typed into through WriteStdin,
// its terminal output arrives as stdout events, Resize reaches it, and its
// whole output is kept as an artifact past the capture like any command's. A
// command without a terminal cannot be resized.
func TestTerminal(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	pid, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh"}, TTY: &runner.TTY{Rows: 20, Cols: 70}, OutputLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteStdin(ctx, alice, id, pid, []byte("stty size; echo mark-$((6*7))\n"), false); err != nil {
		t.Fatal(err)
	}
	ch, err := m.Events(ctx, alice, id, pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	for ev := range ch {
		seen.Write(ev.Data)
		if strings.Contains(seen.String(), "mark-42") {
			break
		}
	}
	if err := m.Resize(ctx, alice, id, pid, runner.TTY{Rows: 33, Cols: 111}); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteStdin(ctx, alice, id, pid, []byte("stty size; exit 4\n"), false); err != nil {
		t.Fatal(err)
	}
	res, err := m.Wait(ctx, alice, id, pid)
	if err != nil || res.ExitCode != 4 || res.Stderr != "" || !res.StdoutTruncated || res.StdoutRef == "" {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	ch, _ = m.Events(ctx, alice, id, pid, 0)
	out := stdoutOf(collect(t, ch))
	if !strings.Contains(out, "20 70\r\n") || !strings.Contains(out, "mark-42\r\n") || !strings.Contains(out, "33 111\r\n") {
		t.Fatalf("terminal output %q", out)
	}
	whole, _, err := m.ReadArtifact(ctx, alice, res.StdoutRef, 0, 0)
	if err != nil || !strings.Contains(string(whole), "20 70\r\n") || !strings.Contains(string(whole), "33 111\r\n") {
		t.Fatalf("artifact %q, %v", whole, err)
	}

	plain, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sleep", "10"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Resize(ctx, alice, id, plain, runner.TTY{Rows: 1, Cols: 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Resize without a terminal = %v, want ErrInvalid", err)
	}
	m.Signal(ctx, alice, id, plain, "KILL")
	m.Wait(ctx, alice, id, plain)
}

// TestEventsReplayWhole: a client that resumes from the start of a command whose
// output is far larger than any in-memory buffer gets all of it, in order, once
// (before the spool, events past 1 MiB were dropped).
func TestEventsReplayWhole(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	pid, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"seq", "1", "400000"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, alice, id, pid); err != nil {
		t.Fatal(err)
	}
	ch, err := m.Events(ctx, alice, id, pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := collect(t, ch)
	var want strings.Builder
	for i := 1; i <= 400000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if got := stdoutOf(all); got != want.String() {
		t.Fatalf("replayed %d bytes, want %d", len(got), want.Len())
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
}
