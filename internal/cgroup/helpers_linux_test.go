package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// requireCgroups needs root and every controller a run uses.
func requireCgroups(t *testing.T) Info {
	t.Helper()
	testenv.RequireRoot(t)
	info := Detect()
	testenv.Require(t, info.CanCreate, "cannot create cgroups: "+info.Reason)
	for _, c := range info.Controllers {
		testenv.Require(t, c.Usable, fmt.Sprintf("controller %s unusable: %s", c.Name, c.Reason))
	}
	return info
}

var groupSeq atomic.Int64

// uniqueMarker returns a word for the command line of cg's processes that no
// process of another test binary on the machine has.
func uniqueMarker(what string, cg *Cgroup) string {
	return fmt.Sprintf("agentbox-%s-%d-%s", what, os.Getpid(), cg.Name())
}

// uniqueName returns a group name no other test of this binary uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, groupSeq.Add(1))
}

// newGroup creates a group under testParent and, at cleanup, kills it, deletes it
// and checks that no directory of it is left.
func newGroup(t *testing.T, opts Options) *Cgroup {
	t.Helper()
	requireCgroups(t)
	if opts.Name == "" {
		opts.Name = uniqueName("t")
	}
	opts.Parent = testParent
	cg, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	t.Cleanup(func() { cleanupGroup(t, cg) })
	return cg
}

func cleanupGroup(t *testing.T, cg *Cgroup) {
	t.Helper()
	if err := cg.Kill(); err != nil {
		t.Errorf("cleanup Kill: %v", err)
	}
	if err := cg.Delete(); err != nil {
		t.Errorf("cleanup Delete: %v", err)
	}
	for _, p := range cg.Paths() {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Delete (stat: %v)", p, err)
		}
	}
}

// child is a process started at a gate.
type child struct {
	cmd    *exec.Cmd
	gate   io.WriteCloser
	stdout *bufio.Reader
	once   sync.Once
	err    error
}

// helperCmd re-executes the test binary in a helper mode (see runHelper).
func helperCmd(mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	return cmd
}

// shCmd runs a shell script; scripts start with `read g`, the gate.
func shCmd(script string) *exec.Cmd {
	return exec.Command("/bin/sh", "-c", script)
}

// startIn starts cmd, puts it in cg while it waits at its gate, then opens the gate.
func startIn(t *testing.T, cg *Cgroup, cmd *exec.Cmd) *child {
	t.Helper()
	c := prepare(t, cmd)
	if err := cg.AddProc(cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	c.open(t)
	return c
}

// prepare starts cmd with a gate and a stdout pipe and arranges its reaping.
func prepare(t *testing.T, cmd *exec.Cmd) *child {
	t.Helper()
	c := &child{cmd: cmd}
	var err error
	if c.gate, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdout = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		c.wait()
	})
	return c
}

func (c *child) open(t *testing.T) {
	t.Helper()
	if _, err := c.gate.Write([]byte("\n")); err != nil {
		t.Fatalf("open gate: %v", err)
	}
}

// wait reaps the child once and returns its exit error.
func (c *child) wait() error {
	c.once.Do(func() {
		c.gate.Close()
		c.err = c.cmd.Wait()
	})
	return c.err
}

// readLine returns the child's next line of output, failing the test after a minute.
func (c *child) readLine(t *testing.T) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := c.stdout.ReadString('\n')
		ch <- result{strings.TrimSpace(line), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read child output: %v", r.err)
		}
		return r.line
	case <-time.After(time.Minute):
		t.Fatal("no output from child after a minute")
		return ""
	}
}

// signaled reports whether err is the exit of a process killed by sig.
func signaled(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// alive reports whether pid runs (a zombie is dead).
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z" && state != "X"
}

// inGroup reports whether pid's /proc/<pid>/cgroup names cg in some hierarchy.
func inGroup(pid int, cg *Cgroup) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "/"+filepath.Join(testParent, cg.Name())+"\n")
}

// eventually polls cond every 10 ms until it holds or d has passed.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

func mustStats(t *testing.T, cg *Cgroup) Stats {
	t.Helper()
	s, err := cg.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

// mustHitsMatch checks that Hits reads what Stats does, in a group whose
// counters no longer move.
func mustHitsMatch(t *testing.T, cg *Cgroup) {
	t.Helper()
	s := mustStats(t, cg)
	h, err := cg.Hits()
	if err != nil || h.OOMKills != s.OOMKills || h.PidsLimitHits != s.PidsLimitHits {
		t.Errorf("Hits = %+v, %v; Stats counted %d OOM kills, %d refused forks", h, err, s.OOMKills, s.PidsLimitHits)
	}
}
