//go:build linux

package landlock

import (
	"fmt"
	"runtime"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Exec confines only the calling OS thread with r, sets no_new_privs on it, and
// replaces the process with argv0; execve ends every other thread. The program and
// all its children then share one Landlock domain at every ABI, so scopes never
// separate them from each other (compare Restrict). Preview reports beforehand what
// Exec enforces. Exec fails closed like Restrict.
//
// Exec returns only on failure. If it fails after locking the calling goroutine to
// its thread (that thread may be restricted), the goroutine stays locked so the
// thread ends with it; the caller should exit the process.
func Exec(r Ruleset, argv0 string, argv, envv []string) error {
	p, err := prepare(r, ABI())
	if err != nil {
		return err
	}
	fd := -1
	var flags uint32
	if p.abi > 0 {
		if fd, flags, err = p.config().NewRulesetFD(p.rules()...); err != nil {
			return fmt.Errorf("landlock: ruleset at ABI %d: %w", p.abi, err)
		}
		defer unix.Close(fd) // close-on-exec; closed here only if Exec fails
	}

	// From here on one thread: the restricted one must be the one that execs.
	runtime.LockOSThread()
	if fd >= 0 {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("landlock: set no_new_privs: %w", err)
		}
		if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
			return fmt.Errorf("landlock: restrict thread at ABI %d: %w", p.abi, err)
		}
	}
	err = syscall.Exec(argv0, argv, envv)
	return fmt.Errorf("landlock: exec %s: %w", argv0, err)
}
