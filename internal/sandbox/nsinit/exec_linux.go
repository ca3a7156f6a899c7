package nsinit

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// lendable are the limits the init sets on itself, soft limit only, around the
// fork of a command, so that the command has them from its first instruction:
// the init neither writes regular files (FSIZE) nor minds SIGXCPU (CPU, which it
// ignores), and receives no descriptor meanwhile (NOFILE: the serve loop and the
// fork are one thread's). RLIMIT_AS and
// RLIMIT_NPROC are not lent: the Go runtime's other threads could fail to map
// memory or to start a thread meanwhile, and that kills the init.
var lendable = map[int]bool{unix.RLIMIT_NOFILE: true, unix.RLIMIT_FSIZE: true, unix.RLIMIT_CPU: true}

// minLentNoFile: below it RLIMIT_NOFILE is not lent, as ForkExec itself needs a
// descriptor above the init's open ones; prlimit alone applies it.
const minLentNoFile = 64

// startExec starts one command of a persistent sandbox as the sandbox user in a
// session of its own, with fds as its stdin, stdout and stderr, and returns its pid
// and a pidfd of it (CLONE_PIDFD), which polls readable once it exits. A command that
// cannot be found or run fails at stage "exec" with ENOENT or EACCES, as in
// startCommand.
//
// Its rlimits: the init cannot lower its own hard limits for one of the many
// commands it serves, so the lendable ones are lent (soft) during the fork and
// every one is then set with prlimit (soft and hard). A limit not lent, and
// RLIMIT_AS and RLIMIT_NPROC, hold only from that prlimit, microseconds after the
// command's execve: until then it runs under the init's (the sandbox Config's)
// limits. The cgroup's memory and pids limits have no such gap.
func startExec(r *Request, fds []int) (pid, pidfd int, err error) {
	path, err := findCommand(r.Argv[0], r.Dir, r.Env)
	if err != nil {
		return 0, -1, err
	}
	env := r.Env
	if env == nil {
		env = []string{}
	}
	attr := &syscall.ProcAttr{
		Dir:   r.Dir,
		Env:   env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		// A terminal (Request.TTY) becomes the session's controlling terminal.
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: r.TTY != nil, Ctty: 0, Credential: commandCred(), PidFD: &pidfd},
	}
	pid, err = forkLent(path, r.Argv, attr, r.Rlimits)
	if err != nil {
		return 0, -1, err
	}
	for _, l := range append([]Rlimit{{Resource: unix.RLIMIT_CORE}}, r.Rlimits...) {
		rl := unix.Rlimit{Cur: l.Cur, Max: l.Max}
		if err := unix.Prlimit(pid, l.Resource, &rl, nil); err != nil && err != unix.ESRCH {
			// The init reaps it like any orphan.
			_ = unix.Kill(pid, unix.SIGKILL)
			unix.Close(pidfd)
			return 0, -1, atf(err, "prlimit %d", l.Resource)
		}
	}
	return pid, pidfd, nil
}

// forkLent forks and executes the command with the lendable limits lent.
// syscall.Setrlimit (not unix.Setrlimit) also tells the Go runtime not to put
// back its own RLIMIT_NOFILE in the child.
func forkLent(path string, argv []string, attr *syscall.ProcAttr, limits []Rlimit) (int, error) {
	var lent []Rlimit
	defer func() {
		for _, l := range lent {
			_ = syscall.Setrlimit(l.Resource, &syscall.Rlimit{Cur: l.Cur, Max: l.Max})
		}
	}()
	for _, l := range limits {
		if !lendable[l.Resource] || (l.Resource == unix.RLIMIT_NOFILE && l.Cur < minLentNoFile) {
			continue
		}
		var old syscall.Rlimit
		if err := syscall.Getrlimit(l.Resource, &old); err != nil {
			return 0, atf(err, "getrlimit %d", l.Resource)
		}
		lent = append(lent, Rlimit{Resource: l.Resource, Cur: old.Cur, Max: old.Max})
		if err := syscall.Setrlimit(l.Resource, &syscall.Rlimit{Cur: min(l.Cur, old.Max), Max: old.Max}); err != nil {
			return 0, atf(err, "setrlimit %d", l.Resource)
		}
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return 0, at("exec", err)
	}
	return pid, nil
}
