package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

func TestMain(m *testing.M) {
	nsinit.MaybeRun()
	if os.Getenv(imageProbeEnv) != "" {
		os.Exit(imageProbe(os.Args[1:]))
	}
	// The test binary, and the helpers it starts (they inherit TMPDIR), keep
	// their upper layers in a state root of their own: agentbox processes on the
	// machine run ReapStale on the host's, and would reap what a killed helper
	// left before TestReapStale looks at it.
	if os.Getenv(ownStateEnv) == "" {
		dir, err := os.MkdirTemp("", "agentbox-sandbox-test-")
		if err != nil || os.Chmod(dir, 0o711) != nil { // traversable, as TMPDIR is
			fmt.Fprintln(os.Stderr, "private TMPDIR:", err)
			os.Exit(1)
		}
		os.Setenv("TMPDIR", dir)
		os.Setenv(ownStateEnv, "1")
		ownTmp = dir
	}
	stateRoot = filepath.Join(os.TempDir(), "agentbox-state")
	if os.Getenv(hostHelperEnv) != "" {
		runHostHelper()
	}
	if os.Getenv(reapHelperEnv) != "" {
		runReapHelper()
	}
	// Let the runtime open its poller first: it is not a leak.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before := openFDs()
	goroutines := runtime.NumGoroutine()
	code := m.Run()
	if !settle(func() bool { return runtime.NumGoroutine() <= goroutines }) {
		buf := make([]byte, 1<<16)
		fmt.Fprintf(os.Stderr, "leaked goroutines: %d before, %d after\n%s\n", goroutines,
			runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		code = 1
	}
	// Other processes (the runner's tests) may run sandboxes meanwhile: look only
	// at this process's.
	if left := leftovers(footprints); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leftover sandbox state: %q\n", left)
		code = 1
	}
	// Every sandbox must have been reaped and every descriptor closed.
	if kids := children(os.Getpid()); len(kids) > 0 {
		fmt.Fprintf(os.Stderr, "leaked child processes: %v\n", kids)
		code = 1
	}
	if after := openFDs(); after > before {
		fmt.Fprintf(os.Stderr, "leaked file descriptors: %d before, %d after\n", before, after)
		code = 1
	}
	if ownTmp != "" {
		os.RemoveAll(ownTmp)
	}
	os.Exit(code)
}

// ownStateEnv marks a process whose TMPDIR TestMain has made private.
const ownStateEnv = "AGENTBOX_SANDBOX_TEST_OWN_TMPDIR"

// ownTmp is the private TMPDIR this process made, removed at the end.
var ownTmp string

// footprint lists what a sandbox leaves on the host while it exists: its cgroup's
// directories, its host uid reservation and its upper layer.
func footprint(sb *Sandbox) []string {
	out := sb.cg.Paths()
	if sb.id.reserve != "" {
		out = append(out, sb.id.reserve)
	}
	if sb.state != "" {
		out = append(out, sb.state)
	}
	return out
}

var (
	footprintsMu sync.Mutex
	footprints   []string // of every sandbox started by startWith
)

// leftovers returns the paths in ps that still exist.
func leftovers(ps []string) []string {
	var out []string
	for _, p := range ps {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// settle reports whether ok becomes true within a second.
func settle(ok func() bool) bool {
	for range 100 {
		if ok() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func openFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// children returns the pids of pid's children (of all its threads).
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

// waitForChild waits until pid has a child that executed its program, and returns it.
func waitForChild(t *testing.T, pid int) int {
	t.Helper()
	comm := func(pid int) string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return string(b)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		// A child that still has its parent's name has not reached its execve:
		// it is a copy of the init, before it took the command's identity.
		if kids := children(pid); len(kids) > 0 && comm(kids[0]) != comm(pid) {
			return kids[0]
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("pid %d has no child that executed after 5s", pid)
	return 0
}

// hostStatus reads /proc/<pid>/status as the host sees it.
func hostStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// result is what one sandboxed command did.
type result struct {
	stdout, stderr string
	exit           Exit
	waitErr        error
	survivors      int
	sb             *Sandbox
}

// running is a started sandbox whose output is being collected.
type running struct {
	sb             *Sandbox
	stdin          *os.File
	wg             sync.WaitGroup
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
}

// lockedWriter serialises writes to a buffer that stdoutSnapshot reads.
type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// startWith starts cfg with pipes for stdout and stderr (and stdin if asked).
func startWith(t *testing.T, cfg Config, stdin bool) *running {
	t.Helper()
	testenv.RequireRoot(t)
	r := &running{}
	var stdio Stdio
	var closeAfter []*os.File
	if stdin {
		in, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stdio.Stdin, r.stdin = in, w
		closeAfter = append(closeAfter, in)
	}
	for _, dst := range []struct {
		buf *bytes.Buffer
		f   **os.File
	}{{&r.stdout, &stdio.Stdout}, {&r.stderr, &stdio.Stderr}} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		*dst.f = pw
		closeAfter = append(closeAfter, pw)
		r.wg.Add(1)
		go func(buf *bytes.Buffer) {
			defer r.wg.Done()
			io.Copy(lockedWriter{&r.mu, buf}, pr)
			pr.Close()
		}(dst.buf)
	}
	sb, err := Start(cfg, stdio)
	for _, f := range closeAfter {
		f.Close()
	}
	if err != nil {
		if r.stdin != nil {
			r.stdin.Close()
		}
		r.wg.Wait()
		t.Fatalf("Start: %v", err)
	}
	r.sb = sb
	footprintsMu.Lock()
	footprints = append(footprints, footprint(sb)...)
	footprintsMu.Unlock()
	return r
}

// finish writes input to stdin (if the sandbox has one), waits and destroys.
func (r *running) finish(t *testing.T, input string) result {
	t.Helper()
	return r.finishInspect(t, input, nil)
}

// finishInspect is finish with inspect called between Kill and Destroy, when the
// upper layer can be read and nothing writes it any more.
func (r *running) finishInspect(t *testing.T, input string, inspect func(*Sandbox)) result {
	t.Helper()
	if r.stdin != nil {
		io.WriteString(r.stdin, input)
		r.stdin.Close()
	}
	exit, waitErr := r.sb.Wait()
	if waitErr != nil {
		t.Errorf("Wait: %v", waitErr)
	}
	if inspect != nil {
		if err := r.sb.Kill(); err != nil {
			t.Errorf("Kill: %v", err)
		}
		inspect(r.sb)
	}
	survivors, err := r.sb.Destroy()
	if err != nil || survivors != 0 {
		t.Errorf("Destroy = %d, %v", survivors, err)
	}
	r.wg.Wait()
	return result{stdout: r.stdout.String(), stderr: r.stderr.String(), exit: exit,
		waitErr: waitErr, survivors: survivors, sb: r.sb}
}

// stdoutSnapshot returns what the command has written to stdout so far.
func (r *running) stdoutSnapshot() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdout.String()
}

// runIn runs cfg to completion and destroys the sandbox.
func runIn(t *testing.T, cfg Config) result {
	t.Helper()
	return startWith(t, cfg, false).finish(t, "")
}

// sh runs a shell script in a default sandbox.
func sh(t *testing.T, script string) result {
	t.Helper()
	return runIn(t, Config{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}})
}
