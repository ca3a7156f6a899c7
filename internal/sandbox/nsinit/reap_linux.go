package nsinit

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// ignoredSignals are those the Go runtime would end the init for when they come
// from another process. As pid 1 of its namespace the init receives from inside
// only signals it handles, and the runtime handles every one: a user-sent SIGTERM
// exits, SIGQUIT, SIGABRT, SIGSEGV and the other synchronous ones throw. For a
// persistent sandbox that would let one command end the environment. Faults the
// kernel raises (a real SIGSEGV in the init) still crash it.
var ignoredSignals = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP,
	unix.SIGABRT, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGUSR1, unix.SIGUSR2, unix.SIGPIPE,
	unix.SIGALRM, unix.SIGTERM, unix.SIGSTKFLT, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM,
	unix.SIGWINCH, unix.SIGIO, unix.SIGPWR, unix.SIGSYS}

// ignoreSignals keeps signals sent from inside the sandbox from ending the init.
// They are caught and dropped rather than set to SIG_IGN, because an ignored
// disposition would be inherited by the command across execve.
func ignoreSignals() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, ignoredSignals...)
	go func() {
		for range c {
		}
	}()
}

// watchChildren asks for SIGCHLD before the command starts, so no exit is missed.
func watchChildren() chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, unix.SIGCHLD)
	return c
}

// readControl forwards the host's control bytes; it closes the channel at EOF.
func readControl(f *os.File, out chan<- byte) {
	defer close(out)
	var b [1]byte
	for {
		n, err := f.Read(b[:])
		if n == 1 {
			out <- b[0]
		}
		if err != nil {
			return
		}
	}
}

// supervise is pid 1's loop, on the thread that started the command (see confine):
// it reaps every process of the sandbox, the init's children and the orphans it
// adopts, and acts on the host's control bytes (CtlTerminate: SIGTERM to everyone;
// EOF, the host closed its end or died: SIGKILL to everyone). When the command (pid
// cmd) has exited, everything still running is killed; supervise returns once nothing
// is left, with the command's wait status and the usage of every process reaped.
func supervise(cmd int, chld <-chan os.Signal, ctl <-chan byte) (unix.WaitStatus, Rusage) {
	var cmdStatus unix.WaitStatus
	cmdDone := false
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil { // ECHILD: nothing left.
				return cmdStatus, usage()
			}
			if pid == 0 {
				break
			}
			if pid == cmd {
				cmdStatus, cmdDone = ws, true
			}
		}
		if cmdDone {
			// kill(-1) from pid 1 reaches every other process of the namespace;
			// it is repeated until none is left, in case one forked meanwhile.
			_ = unix.Kill(-1, unix.SIGKILL)
		}
		select {
		case <-chld:
		case b, ok := <-ctl:
			switch {
			case !ok:
				_ = unix.Kill(-1, unix.SIGKILL)
				ctl = nil
			case b == CtlTerminate:
				_ = unix.Kill(-1, unix.SIGTERM)
			}
		}
	}
}

// usage is the accumulated usage of every reaped process.
func usage() Rusage {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
	return Rusage{UserNS: ru.Utime.Nano(), SysNS: ru.Stime.Nano(), MaxRSSKB: ru.Maxrss}
}
