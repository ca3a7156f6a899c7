package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// detachedTree clones the mount tree at path into a detached mount (open_tree) and
// returns its file descriptor for the init to move into its own mount namespace.
// Measured on Linux 6.18: an O_PATH descriptor of the directory does not work (a bind
// from /proc/self/fd/N fails with EINVAL, the source mount belongs to the host's mount
// namespace; an overlay layer given as /proc/self/fd/N fails with EPERM), while
// move_mount of a detached tree does. The host opens it, so the sandbox's host uid
// never needs to traverse the directories above path (t.TempDir() is 0700 root).
//
// The tree is private whatever the propagation of the host's mount at path.
// If idmap is non-nil the tree is idmapped through it: files owned by the workspace's
// owner appear as the sandbox user, so the sandbox can change them (in the overlay,
// copies in the upper layer belong to the sandbox's host uid).
func detachedTree(path string, idmap *os.File) (*os.File, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return nil, fmt.Errorf("open_tree: %w", err)
	}
	f := os.NewFile(uintptr(fd), "tree")
	// A clone of a shared mount is a peer of it: made private, mounts the sandbox
	// makes in the tree (read-only binds over .git) never show on the host, and
	// mounts the host makes below path never show in the sandbox.
	attr := unix.MountAttr{Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		f.Close()
		return nil, fmt.Errorf("make private: %w", err)
	}
	if idmap != nil {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(idmap.Fd())}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			f.Close()
			return nil, fmt.Errorf("idmap: %w", err)
		}
	}
	return f, nil
}

// idmapUserns returns a user namespace that maps the owner of dir to the sandbox's
// host ids, for an idmapped mount. A namespace exists only while a process is in it
// (or a descriptor of it is open), so a holder is cloned into a new one, its
// namespace opened, and the holder killed (see idmapOwner).
func idmapUserns(dir string, id *identity) (*os.File, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("stat %s: no owner", dir)
	}
	return idmapOwner(int(st.Uid), int(st.Gid), id)
}

// idmapOwner returns a user namespace that maps uid and gid to the sandbox's host
// ids (see idmapUserns). The holder never runs a single instruction of its own: it
// asks to be traced before its execve (PTRACE_TRACEME), so the kernel stops it right
// after the execve, before the new program starts, where it stays until killed. Its
// maps are written by the clone (os/exec writes them before the child may go on).
// Before it was stopped there, the holder was this binary re-executed, which paid
// the Go runtime's start-up and this binary's package initialisation per sandbox
// for a process that only has to exist.
func idmapOwner(uid, gid int, id *identity) (*os.File, error) {
	return idmapRange(syscall.SysProcIDMap{ContainerID: uid, HostID: id.uid, Size: 1},
		syscall.SysProcIDMap{ContainerID: gid, HostID: id.gid, Size: 1})
}

// idmapRange returns a user namespace with one uid and one gid mapping (see
// idmapOwner).
func idmapRange(uids, gids syscall.SysProcIDMap) (*os.File, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{nsinit.Argv0Hold}
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{uids},
		GidMappings: []syscall.SysProcIDMap{gids},
		Ptrace:      true,
		Pdeathsig:   syscall.SIGKILL,
	}
	release, err := spawn(cmd)
	if err != nil {
		return nil, fmt.Errorf("start user namespace holder: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		release()
	}()
	ns, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	if err != nil {
		return nil, fmt.Errorf("open holder's user namespace: %w", err)
	}
	return ns, nil
}
