package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The process level: the command runs as our child in a session of its own, so its
// process group holds it and everything it starts that does not leave the group. To
// catch what does leave (setsid, double forks), agentbox is a child subreaper: orphans of
// the run are re-parented to agentbox instead of init, where cleanup finds and kills them.
//
// rlimits must be in place before the command's first instruction, but Go cannot run code
// between fork and exec. The child is therefore started traced (PTRACE_TRACEME): the
// kernel stops it right after execve, agentbox sets its limits with prlimit, and detaches.
// This costs two system calls, where re-executing a helper would cost a second execve.

var (
	subreaperOnce sync.Once
	subreaperErr  error
	// direct holds the pids this package started and has not yet reaped, so that cleanup
	// never mistakes another run's main process for an orphan.
	direct sync.Map // pid -> struct{}
)

type procChild struct {
	pid       int
	pidfd     int
	startTime uint64 // boot-clock ticks just before the fork: the run's processes start later
	reaped    bool
	mu        sync.Mutex
}

func startProcess(s Spec, io stdio) (child, error) {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	if subreaperErr != nil {
		return nil, fmt.Errorf("become child subreaper: %w", subreaperErr)
	}
	dir, err := workDir(s)
	if err != nil {
		return nil, err
	}
	// The process level shares the host's filesystem anyway: HOME is the working
	// directory and TMPDIR the host's.
	env := DefaultEnv(dir, os.TempDir(), s.Env...)
	path, err := lookPath(s.Argv[0], dir, env)
	if err != nil {
		return nil, err
	}
	return forkTraced(path, s, dir, env, io)
}

func forkTraced(path string, s Spec, dir string, env []string, io stdio) (*procChild, error) {
	// The tracer is the thread that forked; PTRACE_DETACH must come from it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pidfd := -1
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{io.stdin.Fd(), io.stdout.Fd(), io.stderr.Fd()},
		Sys: &syscall.SysProcAttr{
			Setsid:    true,
			Ptrace:    true,
			Pdeathsig: syscall.SIGKILL,
			PidFD:     &pidfd,
		},
	}
	// Orphans of this run started after this moment; clock ticks since boot, as in
	// /proc/<pid>/stat, so later scans can compare without reading the child's stat.
	started := bootTicks()
	pid, err := syscall.ForkExec(path, s.Argv, attr)
	if err != nil {
		return nil, execError(s.Argv[0], err)
	}
	direct.Store(pid, struct{}{})
	c := &procChild{pid: pid, pidfd: pidfd, startTime: started}
	fail := func(err error) (*procChild, error) {
		unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		var ws unix.WaitStatus
		wait4(pid, &ws, 0, nil)
		direct.Delete(pid)
		unix.Close(pidfd)
		return nil, err
	}
	var ws unix.WaitStatus
	if _, err := wait4(pid, &ws, unix.WALL, nil); err != nil {
		return fail(fmt.Errorf("wait for exec stop: %w", err))
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		return fail(fmt.Errorf("child did not stop at exec (status %#x)", ws))
	}
	if err := setRlimits(pid, s.Limits, s.Isolation); err != nil {
		return fail(err)
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		return fail(fmt.Errorf("detach: %w", err))
	}
	return c, nil
}

// setRlimits lowers the command's limits. It never raises a hard limit (root here may
// lack CAP_SYS_RESOURCE): a request above agentbox's own hard limit is clamped to it.
func setRlimits(pid int, l Limits, iso Isolation) error {
	type rl struct {
		res  int
		cur  uint64
		max  uint64
		name string
	}
	// SIGXCPU at the soft limit, SIGKILL one second later.
	sec := l.cpuSeconds()
	want := []rl{{unix.RLIMIT_CPU, sec, sec + 1, "cpu"}}
	want = append(want,
		rl{unix.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize), "file size"},
		rl{unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles), "open files"},
		rl{unix.RLIMIT_CORE, 0, 0, "core"},
	)
	if l.Memory > 0 {
		want = append(want, rl{unix.RLIMIT_AS, uint64(l.Memory), uint64(l.Memory), "address space"})
	}
	if l.Pids > 0 {
		want = append(want, rl{unix.RLIMIT_NPROC, uint64(l.Pids), uint64(l.Pids), "processes"})
	}
	for _, r := range want {
		var cur unix.Rlimit
		if err := unix.Prlimit(pid, r.res, nil, &cur); err != nil {
			return fmt.Errorf("read %s limit: %w", r.name, err)
		}
		next := unix.Rlimit{Cur: min(r.cur, cur.Max), Max: min(r.max, cur.Max)}
		if err := unix.Prlimit(pid, r.res, &next, nil); err != nil {
			return fmt.Errorf("set %s limit: %w", r.name, err)
		}
	}
	return nil
}

func (c *procChild) wait() exitInfo {
	var ws unix.WaitStatus
	var ru unix.Rusage
	_, err := wait4(c.pid, &ws, 0, &ru)
	c.mu.Lock()
	c.reaped = true
	c.mu.Unlock()
	direct.Delete(c.pid)
	if err != nil {
		return exitInfo{waitErr: err}
	}
	ei := exitInfo{code: ws.ExitStatus(), usage: usageOf(&ru)}
	if ws.Signaled() {
		ei.sig = ws.Signal()
	}
	return ei
}

// wait4 retries on EINTR (the Go runtime's own signals interrupt it).
func wait4(pid int, ws *unix.WaitStatus, opts int, ru *unix.Rusage) (int, error) {
	for {
		got, err := unix.Wait4(pid, ws, opts, ru)
		if err != unix.EINTR {
			return got, err
		}
	}
}

func (c *procChild) signal(sig syscall.Signal) {
	c.mu.Lock()
	if !c.reaped {
		unix.PidfdSendSignal(c.pidfd, sig, nil, 0)
	}
	c.mu.Unlock()
	unix.Kill(-c.pid, sig) // the session's process group, which outlives its leader
	for _, p := range c.members() {
		signalProc(p, sig)
	}
}

func (c *procChild) cleanup(grace time.Duration) cleanupInfo {
	defer unix.Close(c.pidfd)
	var info cleanupInfo
	if c.quiet() {
		return info
	}
	sig := syscall.SIGKILL
	if grace > 0 {
		sig = syscall.SIGTERM
	}
	termUntil := time.Now().Add(grace)
	giveUp := termUntil.Add(5 * time.Second)
	sent := false
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		members := c.members()
		live := 0
		for _, p := range members {
			if p.state == 'Z' {
				if p.ppid == os.Getpid() {
					info.usage.add(reap(p.pid))
				}
				continue
			}
			live++
		}
		if live == 0 {
			return info
		}
		now := time.Now()
		if sig == syscall.SIGTERM && now.After(termUntil) {
			sig, sent = syscall.SIGKILL, false
		}
		if sig == syscall.SIGKILL && now.After(giveUp) {
			info.survivors = live
			return info
		}
		if !sent || sig == syscall.SIGKILL {
			unix.Kill(-c.pid, sig)
			for _, p := range members {
				if p.state != 'Z' {
					signalProc(p, sig)
				}
			}
			sent = true
		}
		time.Sleep(pause)
	}
}

// quiet is the fast path after a normal exit: the process group is empty and agentbox has
// no child it did not start itself, so no process of the run can be left (anything that
// left the group either has a living ancestor in it or was re-parented to us).
func (c *procChild) quiet() bool {
	if err := unix.Kill(-c.pid, 0); err != unix.ESRCH {
		return false
	}
	kids, err := ourChildren()
	if err != nil {
		return false
	}
	for _, pid := range kids {
		if _, ok := direct.Load(pid); !ok {
			return false
		}
	}
	return true
}

// members lists the processes of this run: its session and process group (both the
// main process's pid), their descendants, and orphans re-parented to agentbox that lead
// sessions of their own.
func (c *procChild) members() []procInfo {
	procs, err := readProcs()
	if err != nil {
		return nil
	}
	self := os.Getpid()
	selfSid, _ := unix.Getsid(0)
	in := map[int]bool{}
	for _, p := range procs {
		switch {
		case p.pid == c.pid || p.sid == c.pid || p.pgid == c.pid:
			in[p.pid] = true
		case p.ppid == self && p.sid != selfSid && p.startTime >= c.startTime:
			if _, ours := direct.Load(p.pid); !ours {
				in[p.pid] = true
			}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid], grew = true, true
			}
		}
	}
	var out []procInfo
	for _, p := range procs {
		if in[p.pid] {
			out = append(out, p)
		}
	}
	return out
}

// signalProc signals p through a pidfd after checking that the pid still names the same
// process, so a recycled pid is never hit.
func signalProc(p procInfo, sig syscall.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if st, err := procStartTime(p.pid); err != nil || st != p.startTime {
		return
	}
	unix.PidfdSendSignal(fd, sig, nil, 0)
}

// bootTicks is CLOCK_BOOTTIME in the clock ticks (USER_HZ, 100 on Linux) that
// /proc/<pid>/stat uses for start times, rounded down.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Sec)*100 + uint64(ts.Nsec)/10_000_000
}

func reap(pid int) usage {
	var ws unix.WaitStatus
	var ru unix.Rusage
	if got, err := wait4(pid, &ws, unix.WNOHANG, &ru); err != nil || got != pid {
		return usage{}
	}
	return usageOf(&ru)
}

func usageOf(ru *unix.Rusage) usage {
	return usage{
		user:   time.Duration(ru.Utime.Nano()),
		sys:    time.Duration(ru.Stime.Nano()),
		maxRSS: ru.Maxrss * 1024,
	}
}

// workDir is the directory the command starts in at the process level.
func workDir(s Spec) (string, error) {
	ws := s.Workspace
	if ws == "" {
		ws = "."
	}
	dir, err := filepath.Abs(filepath.Join(ws, s.Cwd))
	if err != nil {
		return "", err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("working directory %s is not a directory", dir)
	}
	return dir, nil
}

// lookPath finds argv0 the way execvp would for the command: in the command's PATH, not
// agentbox's, and relative to the command's working directory.
func lookPath(argv0, dir string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, checkExecutable(argv0, p)
	}
	pathEnv := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	var denied error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, argv0)
		err := checkExecutable(argv0, p)
		if err == nil {
			return p, nil
		}
		var se *startError
		if errors.As(err, &se) && se.status == StatusNotExecutable && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", &startError{StatusNotFound, fmt.Errorf("%s: command not found in PATH", argv0)}
}

func checkExecutable(name, p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return &startError{StatusNotFound, fmt.Errorf("%s: not found", name)}
	}
	if st.IsDir() {
		return &startError{StatusNotExecutable, fmt.Errorf("%s: is a directory", name)}
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return &startError{StatusNotExecutable, fmt.Errorf("%s: cannot execute: %w", name, err)}
	}
	return nil
}

func execError(name string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return &startError{StatusNotFound, fmt.Errorf("%s: not found: %w", name, err)}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EPERM):
		return &startError{StatusNotExecutable, fmt.Errorf("%s: cannot execute: %w", name, err)}
	}
	return fmt.Errorf("start %s: %w", name, err)
}
