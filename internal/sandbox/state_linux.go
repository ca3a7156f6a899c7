package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// stateRoot holds one directory per overlay sandbox (statePrefix + random), with the
// overlay's upper and work directories. The place is fixed so that ReapStale finds
// what a crashed agentbox left behind. As root each directory has a size-limited
// tmpfs of its own mounted on it, so the upper layer never reaches the host's disk.
var stateRoot = func() string {
	if os.Geteuid() == 0 {
		return filepath.Join(os.TempDir(), "agentbox-state")
	}
	return filepath.Join(os.TempDir(), "agentbox-state-"+strconv.Itoa(os.Geteuid()))
}()

// statePrefix starts the name of every state directory.
const statePrefix = "sb-"

// Liveness is a flock, not a pid file: the kernel drops it when its holder dies,
// and a pid can be reused. Each Sandbox holds an exclusive lock on its state
// directory until Destroy has removed it: where there is a tmpfs, both on the
// directory beneath it and on its root, since a process in another mount namespace
// (one that does not show the tmpfs) reaches the first by the same path. On
// stateRoot itself, creating and removing a state directory take a shared lock and
// ReapStale an exclusive one, so it never sees a directory between its creation and
// its owner's lock.

// openStateRoot creates stateRoot if needed, checks that it belongs to us and that
// nobody else can write in it (it sits in the world-writable TMPDIR, where another
// user could have planted it), and returns it locked with how (LOCK_SH or LOCK_EX).
// 0711: the sandbox's host uid must be able to traverse it when its init binds the
// upper layer by path.
func openStateRoot(how int) (*os.File, error) {
	switch err := os.Mkdir(stateRoot, 0o711); {
	case err == nil:
		if err := os.Chmod(stateRoot, 0o711); err != nil { // whatever the umask
			return nil, fmt.Errorf("state directory: %w", err)
		}
	case !errors.Is(err, os.ErrExist):
		return nil, fmt.Errorf("state directory: %w", err)
	}
	f, err := os.OpenFile(stateRoot, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		f.Close()
		return nil, fmt.Errorf("state directory %s: owned by uid %d with mode %o, want ours and not group or world writable",
			stateRoot, st.Uid, st.Mode&0o7777)
	}
	if err := flock(f, how); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory: lock: %w", err)
	}
	return f, nil
}

// flock is flock(2), retried on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

// makeState creates the sandbox's private state directory holding the overlay's
// upper and work directories, owned by the sandbox's host uid. As root it is a tmpfs
// of Config.WorkspaceSize (nosuid, nodev, 0700): writes to /workspace end with
// ENOSPC there, and its pages are charged to the memory cgroup of the process that
// writes them. The upper directory gets the workspace's permissions, which the
// overlay shows for /workspace itself.
func (s *Sandbox) makeState(perm os.FileMode) error {
	if err := s.ensureState(); err != nil {
		return err
	}
	if err := s.stateDir("upper", perm); err != nil {
		return err
	}
	return s.stateDir("work", 0o700)
}

// ensureState creates the state directory (see makeState) unless it exists. An
// image root's upper layer shares it (and its size) with the workspace's.
func (s *Sandbox) ensureState() error {
	if s.state != "" {
		return nil
	}
	root, err := openStateRoot(unix.LOCK_SH)
	if err != nil {
		return err
	}
	defer root.Close()
	dir, err := os.MkdirTemp(stateRoot, statePrefix)
	if err != nil {
		return fmt.Errorf("create upper layer: %w", err)
	}
	s.state = dir
	if err := s.lockState(); err != nil {
		return err
	}
	if s.id.root {
		if err := s.mountLayer(dir, s.cfg.WorkspaceSize); err != nil {
			return err
		}
		s.stateMounted = true
		if err := s.lockState(); err != nil {
			return err
		}
	}
	if s.cfg.Keep != "" {
		if err := markKept(dir, s.cfg.Keep); err != nil {
			return err
		}
	}
	return s.stateDir("", 0o700)
}

// mountLayer mounts an upper layer's file system of size bytes on dir: a tmpfs,
// or a disk layer (Config.DiskLayers).
func (s *Sandbox) mountLayer(dir string, size int64) error {
	if s.cfg.DiskLayers {
		return mountDiskLayer(dir, size, s.id.uid, s.id.gid)
	}
	opts := fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", size, s.id.uid, s.id.gid)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount upper layer tmpfs: %w", err)
	}
	return nil
}

// stateDir makes the directory name of the state directory ("" for itself) with
// perm, owned by the sandbox's host uid. A sandbox started From a leftover finds
// it there already: it must be a directory, not a link.
func (s *Sandbox) stateDir(name string, perm os.FileMode) error {
	p := filepath.Join(s.state, name)
	if name != "" {
		err := os.Mkdir(p, perm)
		if errors.Is(err, os.ErrExist) && s.cfg.From != nil {
			if fi, lerr := os.Lstat(p); lerr == nil && fi.IsDir() {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("create upper layer: %w", err)
		}
	}
	if err := os.Chmod(p, perm); err != nil {
		return fmt.Errorf("create upper layer: %w", err)
	}
	if err := os.Lchown(p, s.id.uid, s.id.gid); err != nil {
		return fmt.Errorf("create upper layer: %w", err)
	}
	return nil
}

// lockState locks what the path of the state directory reaches now.
func (s *Sandbox) lockState() error {
	f, err := os.OpenFile(s.state, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("create upper layer: %w", err)
	}
	s.stateLocks = append(s.stateLocks, f)
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("lock upper layer: %w", err)
	}
	return nil
}

// removeState unmounts and removes the state directory, then lets go of its locks.
// Destroy or a failed Start call it once.
func (s *Sandbox) removeState() error {
	if s.state == "" {
		return nil
	}
	var err error
	if root, rerr := openStateRoot(unix.LOCK_SH); rerr != nil {
		err = rerr
	} else {
		err = removeStateDir(s.state, s.stateMounted)
		root.Close()
	}
	s.unlockState()
	return err
}

// unlockState lets go of the state directory's locks.
func (s *Sandbox) unlockState() {
	for _, f := range s.stateLocks {
		f.Close()
	}
	s.stateLocks = nil
}

// removeStateDir detaches the tmpfs on dir, if mounted (the sandbox's mount
// namespace may still hold a reference; the pages go with the last one), and removes
// what is left. Without a tmpfs the upper layer is removed file by file.
func removeStateDir(dir string, mounted bool) error {
	if mounted {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount upper layer: %w", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove upper layer: %w", err)
	}
	return nil
}

// ReapStale removes what sandboxes of an agentbox process that died without
// Destroy left on the host: their state directories (overlay upper layers, with
// their tmpfs mounts), their host id reservations and the cgroups those name.
// Their processes died with them (parent-death signal on the init, and the pid
// namespace with the init). Live sandboxes, in this process or any other, are
// left alone (each holds a lock on its state directory and its reservation), so
// it is safe to call at any time, e.g. when a daemon starts.
func ReapStale() error {
	return errors.Join(reapStates(), reapIDs())
}

func reapStates() error {
	root, err := openStateRoot(unix.LOCK_EX)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	names, err := root.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reap state: %w", err)
	}
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, statePrefix) {
			continue
		}
		if err := reapStateDir(filepath.Join(stateRoot, name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reapStateDir removes dir unless its owner still holds its lock.
func reapStateDir(dir string) error {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("reap state: %w", err)
	}
	err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
	f.Close()
	if errors.Is(err, unix.EWOULDBLOCK) {
		return nil // its sandbox is alive
	}
	if err != nil {
		return fmt.Errorf("reap state %s: %w", dir, err)
	}
	if kept(dir) {
		return nil // for a Start From it, or Discard, while its record exists
	}
	// Every tmpfs stacked there, however many a crash left.
	for unix.Unmount(dir, unix.MNT_DETACH) == nil {
	}
	return removeStateDir(dir, false)
}
