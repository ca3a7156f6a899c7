package main

// Helpers for tests that run `agentbox serve` as a subprocess, with real
// environments, and check that nothing leaks.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/testenv"
)

const (
	e2eToken  = "e2e-token-0123456789abcdef"
	e2eTokenB = "e2e-token-b-0123456789abcd"
	// e2eTokenOp reads the daemon's own metrics (its pools').
	e2eTokenOp = "e2e-token-op-0123456789abc"
)

type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	exited chan error // receives cmd.Wait's result
	socket string
	state  string
	work   string // tenant a's workspace root, holding proj/
	cfg    string
	log    *os.File
	// keep leaves serve's default --on-exit keep; otherwise it runs with
	// --on-exit destroy, so that a stopped daemon leaves nothing.
	keep bool
}

// startDaemon runs agentbox serve with a fresh configuration and waits until it
// answers. state may be reused to restart on the same state directory.
func startDaemon(t *testing.T, dir string) *daemon { return startDaemonWith(t, dir, "") }

// startDaemonWith is startDaemon with extra top-level YAML in the
// configuration ("%[1]s" in it is tenant a's workspace root).
func startDaemonWith(t *testing.T, dir, extra string) *daemon {
	t.Helper()
	testenv.RequireRoot(t)
	d := &daemon{t: t, socket: filepath.Join(dir, "run", "agentbox.sock"), state: filepath.Join(dir, "state"),
		work: filepath.Join(dir, "work"), cfg: filepath.Join(dir, "agentbox.yaml")}
	os.MkdirAll(filepath.Join(d.work, "proj"), 0o755)
	os.WriteFile(filepath.Join(d.work, "proj", "hello.txt"), []byte("hello\n"), 0o644)
	cfg := fmt.Sprintf(`socket: %s
state_dir: %s
shutdown: {grace: 10s}
tenants:
  a: {workspace_roots: [%s], network: {allow: [origin.test], allow_private: [198.18.0.0/15]}, templates: {use: [tiny]}}
  b: {}
tokens:
  - {name: a, token: %s, tenant: a, scopes: [admin]}
  - {name: b, token: %s, tenant: b, scopes: [admin]}
  - {name: op, token: %s, tenant: b, scopes: [operator]}
`, d.socket, d.state, d.work, e2eToken, e2eTokenB, e2eTokenOp) + strings.ReplaceAll(extra, "%[1]s", d.work)
	if err := os.WriteFile(d.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	return d
}

func (d *daemon) start() {
	t := d.t
	var err error
	d.log, err = os.OpenFile(filepath.Join(filepath.Dir(d.cfg), "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(agentbox, "serve", "--config", d.cfg)
	if !d.keep {
		d.cmd.Args = append(d.cmd.Args, "--on-exit", "destroy")
	}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	d.exited = exited
	go func() { exited <- d.cmd.Wait() }()
	t.Cleanup(d.stop)
	c := d.client(e2eToken)
	deadline := time.Now().Add(time.Minute)
	for c.Health(context.Background()) != nil {
		select {
		case err := <-d.exited:
			d.exited <- err
			b, _ := os.ReadFile(d.log.Name())
			t.Fatalf("daemon exited (%v):\n%s", err, b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(d.log.Name())
			t.Fatalf("daemon did not come up:\n%s", b)
		}
	}
}

func (d *daemon) client(token string) *client.Client {
	c, err := client.New(client.Options{Socket: d.socket, Token: token})
	if err != nil {
		d.t.Fatal(err)
	}
	return c
}

// stop ends the daemon with SIGTERM (graceful) if it still runs.
func (d *daemon) stop() {
	if d.exited == nil {
		return
	}
	done := d.exited
	d.exited = nil
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			b, _ := os.ReadFile(d.log.Name())
			d.t.Errorf("daemon exited with %v:\n%s", err, b)
		}
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
		d.t.Errorf("daemon did not stop within 30s of SIGTERM")
	}
	d.log.Close()
}

// kill ends the daemon with SIGKILL: no cleanup at all.
func (d *daemon) kill() {
	d.cmd.Process.Kill()
	<-d.exited
	d.exited = nil
	d.log.Close()
}

// cli runs the agentbox CLI against this daemon.
func (d *daemon) cli(args ...string) (string, string, int) {
	d.t.Helper()
	cmd := exec.Command(agentbox, args...)
	cmd.Env = append(os.Environ(), "AGENTBOX_SERVER="+d.socket, "AGENTBOX_TOKEN="+e2eToken)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		d.t.Fatal(err)
	}
	return o.String(), e.String(), status
}

// tracker samples the processes below the daemon while it runs, and the cgroups
// they live in, so that after the daemon is gone one can check that none of them
// remains: sandbox inits, the commands in them, their agentbox cgroups.
type tracker struct {
	root    int
	state   string
	mu      sync.Mutex
	procs   map[int]string // pid -> start time (field 22 of /proc/PID/stat)
	cmdline map[int]string
	inits   map[int]bool // the daemon's children: sandbox inits
	cgroups map[string]bool
	stop    chan struct{}
	done    chan struct{}
}

func (d *daemon) track() *tracker {
	tr := &tracker{root: d.cmd.Process.Pid, state: d.state, procs: map[int]string{}, cmdline: map[int]string{}, inits: map[int]bool{},
		cgroups: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		for {
			tr.sample()
			select {
			case <-tr.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return tr
}

func procStart(pid int) (ppid int, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:]) // f[0] is state (field 3)
	if len(f) < 20 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19], true
}

func (tr *tracker) sample() {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	start := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, st, ok := procStart(pid); ok {
			parent[pid], start[pid] = pp, st
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for pid := range parent {
		desc := false
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == tr.root {
				desc = true
				break
			}
		}
		if !desc {
			continue
		}
		tr.procs[pid] = start[pid]
		if parent[pid] == tr.root {
			tr.inits[pid] = true
		}
		if tr.cmdline[pid] == "" {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			tr.cmdline[pid] = strings.ReplaceAll(string(cmd), "\x00", " ")
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		for _, line := range strings.Split(string(cg), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 || !strings.Contains(parts[2], "/agentbox/") {
				continue
			}
			ctl := parts[1]
			switch {
			case ctl == "":
				ctl = "unified"
			case strings.HasPrefix(ctl, "name="):
				continue
			}
			for _, c := range strings.Split(ctl, ",") {
				tr.cgroups[filepath.Join("/sys/fs/cgroup", c, parts[2])] = true
			}
		}
	}
}

// leaks stops sampling and lists what is left: a sampled process still alive (same
// pid, same start time), a sampled cgroup still present, a mount below the state
// directory, an environment directory in it.
func (tr *tracker) leaks() []string {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for pid, st := range tr.procs {
		if _, now, ok := procStart(pid); ok && now == st {
			out = append(out, fmt.Sprintf("process %d %q", pid, tr.cmdline[pid]))
		}
	}
	for cg := range tr.cgroups {
		if _, err := os.Stat(cg); err == nil {
			out = append(out, "cgroup "+cg)
		}
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], tr.state) {
			out = append(out, "mount "+f[4])
		}
	}
	envs, _ := os.ReadDir(filepath.Join(tr.state, "envs"))
	for _, e := range envs {
		out = append(out, "state "+e.Name())
	}
	sort.Strings(out)
	return out
}

// mustHaveSeen fails unless the tracker saw at least n sandboxes and a cgroup of
// theirs: otherwise its "nothing leaked" would prove nothing.
//
// It waits for the tracker's samples (every 20 ms) to catch up, up to 10 s: on a
// quiet host a test can reach it before a sample has found a sandbox's processes
// in their cgroup (TestRestartEvents failed so in 0.14 s).
func (tr *tracker) mustHaveSeen(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		inits, procs, cgroups := len(tr.inits), len(tr.procs), len(tr.cgroups)
		tr.mu.Unlock()
		if inits >= n && cgroups > 0 {
			t.Logf("tracked %d sandbox inits, %d processes, %d cgroups", inits, procs, cgroups)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tracker saw %d sandboxes (want %d) and %d cgroups: it cannot see leaks", inits, n, cgroups)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noLeaks polls until nothing the tracker saw remains, or fails after a minute.
func noLeaks(t *testing.T, tr *tracker) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		l := tr.leaks()
		if len(l) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaked:\n%s", strings.Join(l, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventually polls cond every 10 ms until it holds or d has passed.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
