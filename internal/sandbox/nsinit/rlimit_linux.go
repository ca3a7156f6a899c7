package nsinit

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// lentLimits are set on the init only while it starts the command (soft limit)
// and on the command right after (hard limit): under them the init itself could
// not survive. Its Go runtime has 1.7 GB of address space reserved, and with cgo a
// new runtime thread needs a fresh thread stack (measured: "pthread_create failed"
// and the init dead under RLIMIT_AS of 64 MiB); its own threads count against
// RLIMIT_NPROC.
var lentLimits = map[int]bool{unix.RLIMIT_AS: true, unix.RLIMIT_NPROC: true}

// setRlimits sets the limits on the init itself just before it starts the command,
// which inherits them at fork, so they hold from the command's first instruction.
// For lentLimits only the soft limit is set, and the previous values are returned
// for finishRlimits. syscall.Setrlimit (not unix.Setrlimit) tells the Go runtime
// not to restore its own RLIMIT_NOFILE in the child.
func setRlimits(limits []Rlimit) (lent []Rlimit, err error) {
	for _, l := range limits {
		rl := syscall.Rlimit{Cur: l.Cur, Max: l.Max}
		if lentLimits[l.Resource] {
			var old syscall.Rlimit
			if err := syscall.Getrlimit(l.Resource, &old); err != nil {
				return lent, atf(err, "getrlimit %d", l.Resource)
			}
			lent = append(lent, Rlimit{Resource: l.Resource, Cur: old.Cur, Max: old.Max})
			rl.Max = old.Max
		}
		if err := syscall.Setrlimit(l.Resource, &rl); err != nil {
			return lent, atf(err, "setrlimit %d", l.Resource)
		}
	}
	return lent, nil
}

// finishRlimits gives the command (pid) the hard limits of lentLimits and gives the
// init back its own. Between its execve and this prlimit the command runs with the
// soft limit but the init's hard one: a program that raises its own soft limit in
// its first microseconds keeps what it allocated or forked meanwhile. The cgroup's
// memory and pids limits, which do not have this gap, are the boundary.
func finishRlimits(pid int, limits, lent []Rlimit) error {
	for _, l := range limits {
		if !lentLimits[l.Resource] {
			continue
		}
		rl := unix.Rlimit{Cur: l.Cur, Max: l.Max}
		if err := unix.Prlimit(pid, l.Resource, &rl, nil); err != nil && err != unix.ESRCH {
			return atf(err, "prlimit %d", l.Resource)
		}
	}
	for _, l := range lent {
		rl := syscall.Rlimit{Cur: l.Cur, Max: l.Max}
		if err := syscall.Setrlimit(l.Resource, &rl); err != nil {
			return atf(err, "restore rlimit %d", l.Resource)
		}
	}
	return nil
}
