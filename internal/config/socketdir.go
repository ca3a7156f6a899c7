package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The directory of the daemon's socket holds what a client trusts: the socket it
// sends its token to, and the local daemon's token file. Whoever can write in that
// directory can swap both, so it must be its user's own: not a symbolic link, owned
// by the daemon's user, and writable by nobody else. The default for a user
// without $XDG_RUNTIME_DIR, $TMPDIR/agentbox-UID, lies in a world-writable
// directory where anyone may have created it first.

// ErrUnsafeDir is matched by every *UnsafeDirError.
var ErrUnsafeDir = errors.New("unsafe socket directory")

// UnsafeDirError reports a socket directory another user could change.
type UnsafeDirError struct {
	Dir    string
	Reason string // "is owned by uid 12345", "is writable by group or others (mode 0777)", ...
}

func (e *UnsafeDirError) Error() string {
	return fmt.Sprintf("socket directory %s %s: another user could replace the socket or the token in it; "+
		"remove it (agentbox serve creates it, mode 0700) or choose another socket with --socket or $AGENTBOX_SOCKET",
		e.Dir, e.Reason)
}

func (e *UnsafeDirError) Unwrap() error { return ErrUnsafeDir }

// OpenSocketDir is the daemon's side: it creates dir with perm if it is missing
// (its parents 0755), checks that it is the daemon user's own (see UnsafeDirError),
// and returns it opened, so that what is written in it goes to the directory
// checked, whatever happens to its path. CheckRoot checks it again.
func OpenSocketDir(dir string, perm fs.FileMode) (*os.Root, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	switch err := os.Mkdir(dir, perm); {
	case err == nil:
		if err := os.Chmod(dir, perm); err != nil { // whatever the umask
			return nil, fmt.Errorf("socket directory: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	return openDir(dir, daemonOwned)
}

// OpenDaemonDir is a client's side: it opens the directory of a daemon's socket
// and checks it like OpenSocketDir, except that root's directories are trusted
// too (a root daemon serves other users). A missing directory is fs.ErrNotExist:
// no daemon runs there.
func OpenDaemonDir(dir string) (*os.Root, error) {
	return openDir(dir, func(uid uint32) bool { return daemonOwned(uid) || uid == 0 })
}

func daemonOwned(uid uint32) bool { return int(uid) == os.Geteuid() }

// openDir checks dir without following it, opens it, and checks that what it
// opened is what it checked.
func openDir(dir string, trusted func(uint32) bool) (*os.Root, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := checkDir(dir, fi, trusted); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := checkRoot(r, fi, trusted); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// CheckRoot checks an open socket directory again, right before it is used.
func CheckRoot(r *os.Root) error { return checkRoot(r, nil, daemonOwned) }

func checkRoot(r *os.Root, want fs.FileInfo, trusted func(uint32) bool) error {
	fi, err := r.Stat(".")
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if want != nil && !os.SameFile(fi, want) {
		return &UnsafeDirError{Dir: r.Name(), Reason: "was replaced while it was opened"}
	}
	return checkDir(r.Name(), fi, trusted)
}

func checkDir(dir string, fi fs.FileInfo, trusted func(uint32) bool) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafeDirError{Dir: dir, Reason: "is a symbolic link"}
	case !fi.IsDir():
		return &UnsafeDirError{Dir: dir, Reason: "is not a directory"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &UnsafeDirError{Dir: dir, Reason: "has no owner this system reports"}
	}
	if !trusted(st.Uid) {
		return &UnsafeDirError{Dir: dir, Reason: fmt.Sprintf("is owned by uid %d, not by uid %d", st.Uid, os.Geteuid())}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return &UnsafeDirError{Dir: dir, Reason: fmt.Sprintf("is writable by group or others (mode %04o)", fi.Mode().Perm())}
	}
	return nil
}
