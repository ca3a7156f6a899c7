package attack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// attackTimeout is the --timeout of runs that are to end some other way: the
// command's own end or another limit. A run takes a fraction of a second on an
// idle machine; this is for one loaded by other test suites besides.
const attackTimeout = "5m"

// isolation is the level every `agentbox run` of the suite uses: namespace, or
// the one AGENTBOX_ATTACK_ISOLATION names (TestSuiteOnEveryLevel runs the suite
// again at each level).
var isolation = cmp.Or(os.Getenv(isolationEnv), "namespace")

const isolationEnv = "AGENTBOX_ATTACK_ISOLATION"

// boxOpts describes one `agentbox run`.
type boxOpts struct {
	flags   []string  // extra flags before "--"
	cmd     []string  // the command; usually fx.attack(...)
	env     []string  // extra environment of agentbox itself
	stdin   io.Reader // agentbox's stdin (nil: /dev/null)
	extra   []*os.File
	diffOut bool   // pass --diff-out and read it back
	during  func() // called once the sandbox's first tagged process is seen
	// term, when set, is agentbox's stdin, stdout and stderr, as a user's terminal
	// would be; what reached its screen is read back as agentbox's stdout.
	term *terminal
	// plain leaves out --json: stdout is the command's output as agentbox relays it.
	plain bool
}

// boxRun is everything one run produced, from both sides.
type boxRun struct {
	res      Result
	exit     int    // agentbox's own exit status
	raw      string // agentbox's stdout (the JSON, unless plain)
	rawErr   string // agentbox's own stderr
	diff     string // the --diff-out file
	at       *attempts
	watch    *watch
	duration time.Duration
	maxRSS   int64 // agentbox's own peak resident memory, bytes
}

// attack builds the command that runs the attacker from the workspace (the host
// directory itself at the process level, which has no /workspace).
func (fx *fixture) attack(vector string, args ...string) []string {
	bin := "/workspace/attacker"
	if isolation == "process" {
		bin = filepath.Join(fx.ws, "attacker")
	}
	return append([]string{bin, "--tag=" + fx.tag, vector}, args...)
}

// hostEnv is agentbox's own environment: it carries secrets that must not reach the
// sandbox (the environment is not inherited).
func (fx *fixture) hostEnv() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + fx.home,
		"AWS_SECRET_ACCESS_KEY=" + fx.secret,
		"ANTHROPIC_API_KEY=" + fx.secret,
		"GITHUB_TOKEN=" + fx.secret,
	}
}

func hasFlag(flags []string, name string) bool {
	return slices.ContainsFunc(flags, func(f string) bool { return f == name || strings.HasPrefix(f, name+"=") })
}

// run runs agentbox once and checks the things every run must satisfy; the caller
// then checks the attack-specific outcome and calls fx.verifyHost.
func (fx *fixture) run(o boxOpts) *boxRun {
	t := fx.t
	t.Helper()
	if fx.before == nil {
		fx.snapshot()
	}
	// Always explicit: if the default ever changed, the attacks must still not run
	// unconfined on this host (TestDefaultIsolationIsNamespace checks the default).
	args := []string{"run", "--json", "--isolation", isolation, "--workspace", fx.ws}
	if o.plain {
		args = slices.Delete(args, 1, 2)
	}
	if !hasFlag(o.flags, "--timeout") {
		args = append(args, "--timeout", attackTimeout)
	}
	if !hasFlag(o.flags, "--output-limit") {
		args = append(args, "--output-limit", "4M")
	}
	diffPath := filepath.Join(fx.dir, "diff-"+randHex(4)+".out")
	if o.diffOut {
		args = append(args, "--diff-out", diffPath)
	}
	args = append(args, o.flags...)
	args = append(args, "--")
	args = append(args, o.cmd...)

	// agentbox must end the run itself: by its --timeout, plus time to clean up (10 minutes past the default attackTimeout).
	wait := 10 * time.Minute
	if i := slices.Index(o.flags, "--timeout"); i >= 0 && i+1 < len(o.flags) {
		if d, err := time.ParseDuration(o.flags[i+1]); err == nil {
			wait = max(wait, d+60*time.Second)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, tools.agentbox, args...)
	cmd.Env = append(fx.hostEnv(), o.env...)
	cmd.Dir = fx.dir
	cmd.Stdin = o.stdin
	cmd.ExtraFiles = o.extra
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if o.term != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = o.term.tty, o.term.tty, o.term.tty
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	w := startWatch(fx.tag, o.during)
	start := time.Now()
	err := cmd.Run()
	r := &boxRun{duration: time.Since(start)}
	w.stop()
	r.watch = w
	r.raw, r.rawErr = stdout.String(), stderr.String()
	if o.term != nil {
		o.term.after = o.term.state(t)
		r.raw = o.term.screen()
	}
	if cmd.ProcessState != nil {
		r.exit = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss << 10
		}
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("agentbox did not run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("agentbox did not finish within %v (its own --timeout did not end it); stderr: %s", wait, r.rawErr)
	}
	if o.diffOut {
		b, _ := os.ReadFile(diffPath)
		r.diff = string(b)
	}
	if o.plain {
		r.at = parseAttempts(strings.ReplaceAll(r.raw, "\r\n", "\n"))
		t.Logf("agentbox %s\n-> exit %d, %v\nstdout: %.4000q\nstderr: %.2000s", strings.Join(args, " "), r.exit,
			r.duration.Round(time.Millisecond), r.raw, r.rawErr)
		return r
	}
	if err := json.Unmarshal([]byte(r.raw), &r.res); err != nil {
		t.Fatalf("agentbox --json output is not one JSON object: %v\nstdout: %q\nstderr: %s", err, r.raw, r.rawErr)
	}
	r.at = parseAttempts(r.res.Stdout)
	t.Logf("agentbox %s\n-> exit %d, signal %q, limit %q, survivors %d, %v, isolation %q, error %q\nattempts:\n%sstderr: %.2000s",
		strings.Join(args, " "), r.res.ExitCode, r.res.sig(), r.res.Limit, r.res.Survivors, r.duration.Round(time.Millisecond),
		r.res.Isolation, r.res.Error, r.at.dump(), r.res.Stderr)
	if r.res.Isolation != isolation {
		t.Errorf("run used isolation %q, want %s", r.res.Isolation, isolation)
	}
	return r
}

// verifyHost asserts that the host is as it was: protected files and (for the overlay)
// the workspace unchanged, the secret absent from everything the run produced,
// victims alive and unsignalled, no process of the run left, its cgroups removed.
func (fx *fixture) verifyHost(r *boxRun) {
	t := fx.t
	t.Helper()
	for _, d := range fx.hostDiffs(r) {
		t.Errorf("HOST CHANGED: %s", d)
	}
}

// hostDiffs is verifyHost's list; controls use it to prove the checks can fire.
func (fx *fixture) hostDiffs(r *boxRun) []string {
	diffs := fx.verifyFiles()
	fx.mu.Lock()
	victims := append([]*victim(nil), fx.victims...)
	fx.mu.Unlock()
	for _, v := range victims {
		diffs = append(diffs, v.verify()...)
	}
	if r == nil {
		return diffs
	}
	for what, s := range map[string]string{"agentbox stdout": r.raw, "agentbox stderr": r.rawErr, "diff-out": r.diff} {
		if strings.Contains(s, fx.secret) {
			diffs = append(diffs, fmt.Sprintf("the host secret appeared in %s", what))
		}
	}
	if r.res.Survivors != 0 {
		diffs = append(diffs, fmt.Sprintf("result reports %d survivors", r.res.Survivors))
	}
	for _, p := range procsWithTag(fx.tag) {
		diffs = append(diffs, fmt.Sprintf("process of the run still alive on the host after agentbox exited: pid %d uid %d %q", p.pid, p.uid, p.cmdline))
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	for _, d := range r.watch.cgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			diffs = append(diffs, fmt.Sprintf("cgroup %s of the run still exists after agentbox exited", d))
		}
	}
	for _, d := range r.watch.stateDirs() {
		if _, err := os.Lstat(d); err == nil {
			diffs = append(diffs, fmt.Sprintf("upper layer %s of the run still exists after agentbox exited", d))
		}
		if m := mountsUnder(d); len(m) > 0 {
			diffs = append(diffs, fmt.Sprintf("mounts of the run's upper layer left on the host: %q", m))
		}
	}
	return diffs
}

// watch polls the host's process table while a run is in progress and records the
// sandbox's processes (found by the tag in their argv) as the host sees them.
type watch struct {
	tag    string
	during func()
	quit   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	seen    map[int]procInfo
	cgroups map[string]bool
	states  map[string]bool          // the run's upper-layer directories in stateRoot
	stateFS map[string]unix.Statfs_t // the filesystem each held when first seen
	maxLive int
}

func startWatch(tag string, during func()) *watch {
	w := &watch{tag: tag, during: during, quit: make(chan struct{}), seen: map[int]procInfo{}, cgroups: map[string]bool{},
		states: map[string]bool{}, stateFS: map[string]unix.Statfs_t{}}
	w.wg.Add(1)
	go w.loop()
	return w
}

func (w *watch) loop() {
	defer w.wg.Done()
	fired := false
	tick := time.NewTicker(15 * time.Millisecond)
	defer tick.Stop()
	for {
		live := procsWithTag(w.tag)
		w.mu.Lock()
		w.maxLive = max(w.maxLive, len(live))
		for _, p := range live {
			if _, ok := w.seen[p.pid]; !ok {
				w.seen[p.pid] = p
				for _, d := range cgroupDirs(p.pid) {
					w.cgroups[d] = true
				}
			}
		}
		w.recordStates()
		w.mu.Unlock()
		if len(live) > 0 && !fired && w.during != nil {
			fired = true
			w.wg.Add(1)
			go func() { defer w.wg.Done(); w.during() }()
		}
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
	}
}

func (w *watch) stop() { close(w.quit); w.wg.Wait() }

// recordStates notes the entries of stateRoot that belong to the run's host uids
// (an upper layer's tmpfs root is owned by the sandbox's uid). Called with w.mu held.
func (w *watch) recordStates() {
	ents, _ := os.ReadDir(stateRoot)
	for _, e := range ents {
		p := filepath.Join(stateRoot, e.Name())
		var st syscall.Stat_t
		if w.states[p] || syscall.Lstat(p, &st) != nil {
			continue
		}
		for _, seen := range w.seen {
			if int(st.Uid) == seen.uid && seen.uid != 0 {
				w.states[p] = true
				var fs unix.Statfs_t
				if unix.Statfs(p, &fs) == nil {
					w.stateFS[p] = fs
				}
				break
			}
		}
	}
}

func (w *watch) stateDirs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for d := range w.states {
		out = append(out, d)
	}
	return out
}

// stateFilesystem returns the filesystem that held the upper-layer directory d
// when the watch first saw it.
func (w *watch) stateFilesystem(d string) (unix.Statfs_t, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fs, ok := w.stateFS[d]
	return fs, ok
}

func (w *watch) cgroupDirs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for d := range w.cgroups {
		out = append(out, d)
	}
	return out
}

// hostUIDs returns the host uids the sandbox's processes ran as.
func (w *watch) hostUIDs() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for _, p := range w.seen {
		if !slices.Contains(out, p.uid) {
			out = append(out, p.uid)
		}
	}
	return out
}

// direct runs the attacker on the host without any sandbox, as uid (0: root), in the
// workspace directory: the control that proves an attack works where nothing stops it.
func (fx *fixture) direct(uid int, extra []*os.File, args ...string) *attempts {
	t := fx.t
	t.Helper()
	if fx.before == nil {
		fx.snapshot()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(fx.ws, "attacker"), append([]string{"--tag=" + fx.tag}, args...)...)
	cmd.Dir = fx.ws
	cmd.Env = append(fx.hostEnv(), fx.directEnv...)
	cmd.ExtraFiles = extra
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Logf("control run %v: %v", args, err)
	}
	at := parseAttempts(string(out))
	t.Logf("control (no sandbox, uid %d) %v:\n%s", uid, args, at.dump())
	return at
}

// wantHostChanged asserts that the host checks caught the control's damage: proof
// that the same checks would catch it under agentbox.
func (fx *fixture) wantHostChanged(r *boxRun, want string) {
	t := fx.t
	t.Helper()
	diffs := fx.hostDiffs(r)
	for _, d := range diffs {
		if strings.Contains(d, want) {
			return
		}
	}
	t.Errorf("control: the host checks did not notice %q; they reported %v", want, diffs)
}
