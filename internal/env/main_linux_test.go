package env

import (
	"context"
	"fmt"
	"github.com/agentbox/agentbox/internal/gvisor"
	"github.com/agentbox/agentbox/internal/sandbox"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

func TestMain(m *testing.M) {
	nsinit.MaybeRun() // the test binary doubles as the sandbox init
	if os.Getenv(crashHelperEnv) != "" {
		runCrashHelper()
	}
	if r, w, err := os.Pipe(); err == nil { // the runtime's poller is not a leak
		r.Close()
		w.Close()
	}
	fds := openFDs()
	goroutines := runtime.NumGoroutine()
	code := m.Run()
	if !settle(func() bool { return runtime.NumGoroutine() <= goroutines }) {
		buf := make([]byte, 1<<16)
		fmt.Fprintf(os.Stderr, "leaked goroutines: %d before, %d after\n%s\n", goroutines,
			runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		code = 1
	}
	if kids := children(); len(kids) > 0 {
		fmt.Fprintf(os.Stderr, "leaked child processes: %v\n", kids)
		code = 1
	}
	if after := openFDs(); after > fds {
		fmt.Fprintf(os.Stderr, "leaked file descriptors: %d before, %d after\n", fds, after)
		code = 1
	}
	os.Exit(code)
}

// openFDs counts open descriptors but /dev/null, which package runner opens
// once and keeps.
func openFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target != os.DevNull {
			n++
		}
	}
	return n
}

func children() []string {
	var out []string
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// settle reports whether ok becomes true within a minute: a deadline for a
// failure to show, generous enough for a loaded machine.
func settle(ok func() bool) bool {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

var (
	alice = Owner{Tenant: "alice", Task: "task-1"}
	bob   = Owner{Tenant: "bob"}
)

// newManager starts a Manager on a fresh state directory; the test's cleanup
// closes it and checks that its environments left nothing on the host.
func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	testenv.RequireRoot(t)
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() {
		m.mu.Lock()
		var prints []footprint
		for _, e := range m.envs {
			prints = append(prints, footprintOf(e))
		}
		m.mu.Unlock()
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n := len(m.snaps); n > 0 {
			t.Errorf("%d snapshot layers left", n)
		}
		for _, f := range prints {
			f.check(t)
		}
		if ents, _ := os.ReadDir(filepath.Join(cfg.StateDir, "envs")); len(ents) > 0 {
			t.Errorf("environment state left: %v", ents)
		}
	})
	return m
}

// envOf returns the live environment id, read under the Manager's lock (the
// reaper and teardowns change the map meanwhile), or fails the test.
func envOf(t *testing.T, m *Manager, id string) *environment {
	t.Helper()
	m.mu.Lock()
	e := m.envs[id]
	m.mu.Unlock()
	if e == nil {
		t.Fatalf("environment %s is not live", id)
	}
	return e
}

// footprint is what an environment holds on the host while it lives.
type footprint struct {
	uid     int
	cgroups []string
	state   string // the sandbox's state directory (upper layer's tmpfs)
	reserve string
}

func footprintOf(e *environment) footprint {
	if gv, ok := e.sb.(*gvisor.Env); ok {
		// Its commands are the Sentry's, not host processes of a uid of their own.
		return footprint{uid: -1, state: gv.StateDir(), cgroups: cgroupDirsOf(gv.Pid())}
	}
	f := footprint{uid: e.ns().HostUID(), state: filepath.Dir(e.ns().UpperDir()),
		reserve: "/run/agentbox/ids/" + strconv.Itoa(e.ns().HostUID())}
	f.cgroups = cgroupDirsOf(e.ns().Pid())
	return f
}

// cgroupDirsOf lists the host directories of the cgroups pid is in below
// "agentbox" (one per v1 hierarchy).
func cgroupDirsOf(pid int) []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.Contains(f[2], "/agentbox/") {
			continue
		}
		ctrl := strings.TrimPrefix(strings.Split(f[1], ",")[0], "name=")
		if ctrl == "" {
			out = append(out, filepath.Join("/sys/fs/cgroup/unified", f[2]))
			continue
		}
		// cpu and cpuacct may share a mount named either way.
		for _, mnt := range []string{f[1], ctrl} {
			p := filepath.Join("/sys/fs/cgroup", mnt, f[2])
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// check fails the test if anything of f is still on the host.
// gone reports whether nothing of the footprint is left.
func (f footprint) gone() bool {
	if len(procsOfUID(f.uid)) > 0 || len(mountsUnder(f.state)) > 0 {
		return false
	}
	for _, p := range append([]string{f.state, f.reserve}, f.cgroups...) {
		if _, err := os.Lstat(p); err == nil {
			return false
		}
	}
	return true
}

func (f footprint) check(t *testing.T) {
	t.Helper()
	if p := procsOfUID(f.uid); len(p) > 0 {
		t.Errorf("processes of host uid %d left: %v", f.uid, p)
	}
	for _, p := range append([]string{f.state, f.reserve}, f.cgroups...) {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left", p)
		}
	}
	if m := mountsUnder(f.state); len(m) > 0 {
		t.Errorf("mounts left under %s: %v", f.state, m)
	}
}

// procsOfUID lists host processes running as uid (zombies excluded).
func procsOfUID(uid int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		s := string(b)
		if strings.Contains(s, "\nUid:\t"+strconv.Itoa(uid)+"\t") && !strings.Contains(s, "\nState:\tZ") {
			out = append(out, e.Name())
		}
	}
	return out
}

// mountsUnder lists the mount points of this process's mount namespace at or
// below dir.
func mountsUnder(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// fixture is a host workspace with a few files.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"README.md":   "hello\n",
		"src/main.go": "package main\n\nfunc main() {\n\tprintln(\"old\")\n}\n",
		"data.bin":    "\x00\x01\x02binary",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// create makes an environment or fails the test.
func create(t *testing.T, m *Manager, o CreateOptions) Info {
	t.Helper()
	if o.Owner == (Owner{}) {
		o.Owner = alice
	}
	info, err := m.Create(context.Background(), o)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return info
}

// sh runs a shell script in an environment as owner alice and returns stdout.
func sh(t *testing.T, m *Manager, id, script string) string {
	t.Helper()
	res, err := m.Exec(context.Background(), alice, id, ExecRequest{Argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("Exec %q: exit %d, stderr %q", script, res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// ns is a namespace environment's sandbox.
func (e *environment) ns() *sandbox.Sandbox { return e.sb.(*sandbox.Sandbox) }
