package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// writeFile writes value to a cgroupfs control file in one write(2), so the kernel
// sees one command, and reports the kernel's error for it.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// readString reads a control file with open, read and close. os.ReadFile would
// also register the descriptor with the runtime's poller (cgroupfs files can be
// polled, so the registration succeeds and is undone at close) and fstat it:
// twice the system calls, on a path an exec takes four times (Hits before and
// after it), where it was a fifth of the daemon's CPU per exec.
func readString(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var out []byte
	for {
		n, err := unix.Read(fd, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return "", &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return string(out), nil
		}
		out = append(out, buf[:n]...)
	}
}

func readInt(path string) (int64, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	n, err := parseInt(s)
	if err != nil {
		return 0, &os.PathError{Op: "parse", Path: path, Err: err}
	}
	return n, nil
}

func readKeyed(path string) (map[string]int64, error) {
	s, err := readString(path)
	if err != nil {
		return nil, err
	}
	return parseKeyed(s), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// subdirs returns dir and every directory below it, parents before children.
// A dir that does not exist yields nothing.
func subdirs(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone while we walked: a removed child, or no group at all
			}
			return err
		}
		if d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// removeTree removes a group directory and any child groups, deepest first. A
// directory that is already gone counts as removed.
func removeTree(dir string) error {
	dirs, err := subdirs(dir)
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := rmdir(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

func rmdir(dir string) error {
	err := unix.Rmdir(dir)
	switch {
	case err == nil || errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.EBUSY):
		return &os.PathError{Op: "rmdir", Path: dir, Err: errors.New("group still has tasks or child groups (Kill first)")}
	}
	return &os.PathError{Op: "rmdir", Path: dir, Err: err}
}

// writable reports whether this process may create entries in dir.
func writable(dir string) error {
	return unix.Access(dir, unix.W_OK)
}

// fields returns the whitespace-separated words of a file such as
// cgroup.controllers, or nil if it cannot be read.
func fields(path string) []string {
	s, err := readString(path)
	if err != nil {
		return nil
	}
	return strings.Fields(s)
}
