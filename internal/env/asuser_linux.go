package env

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// asUser runs fn on an OS thread whose file system identity is, for the duration
// of fn, the sandbox user's host uid and gid with no supplementary groups.
// Host-side file operations on an environment's /workspace run this way:
//
//   - The overlay is mounted in the sandbox's user namespace, where host root is
//     unmapped: a file root creates there fails with EOVERFLOW (measured), so a
//     create-then-fchown cannot work. Created as the sandbox user, files belong to
//     the sandbox user (uid 1000 inside), as if the agent had made them.
//   - It is a second wall behind the traversal-resistant root: with fsuid X and
//     the file system capabilities gone (setfsuid drops them from the effective
//     set), a path that somehow led out of the workspace would meet a stranger's
//     permissions.
//
// setfsuid, setfsgid and the raw setgroups are per thread, so fn's goroutine is
// locked to its thread, and the thread gets root's identity back before it is
// unlocked. It is never left to end with the goroutine: the runtime would then
// destroy it, and a thread's end fires the parent-death signal of every process
// it forked. If the identity cannot be restored, the goroutine parks for good and
// keeps the thread out of use. As an unprivileged user the sandbox user already is
// the caller, and fn just runs.
func asUser(uid, gid int, fn func() error) error {
	if os.Geteuid() != 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := becomeUser(uid, gid)
		if err == nil {
			err = fn()
		}
		done <- err
		if restoreRoot() != nil {
			select {} // never runs anything else with this identity
		}
		runtime.UnlockOSThread()
	}()
	return <-done
}

var rootGroups = sync.OnceValues(unix.Getgroups)

func becomeUser(uid, gid int) error {
	if _, err := rootGroups(); err != nil {
		return fmt.Errorf("read groups: %w", err)
	}
	if err := setThreadGroups(nil); err != nil {
		return fmt.Errorf("drop groups: %w", err)
	}
	unix.Setfsgid(gid)
	unix.Setfsuid(uid)
	return checkIdentity(uid, gid, nil)
}

func restoreRoot() error {
	groups, _ := rootGroups()
	unix.Setfsuid(0)
	unix.Setfsgid(0)
	if err := setThreadGroups(groups); err != nil {
		return err
	}
	return checkIdentity(0, 0, groups)
}

// checkIdentity reads the thread's identity back: setfsuid and setfsgid report
// the previous value, not failure.
func checkIdentity(uid, gid int, groups []int) error {
	if got, _ := unix.SetfsuidRetUid(-1); got != uid {
		return fmt.Errorf("setfsuid %d: still %d", uid, got)
	}
	if got, _ := unix.SetfsgidRetGid(-1); got != gid {
		return fmt.Errorf("setfsgid %d: still %d", gid, got)
	}
	if got, err := unix.Getgroups(); err != nil || !slices.Equal(got, groups) {
		return fmt.Errorf("setgroups %v: now %v (%v)", groups, got, err)
	}
	return nil
}
