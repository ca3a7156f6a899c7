package main

import (
	"errors"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// errName turns an error into a single token: the errno name when there is one.
func errName(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
		return "errno" + strings.ReplaceAll(errno.Error(), " ", "_")
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// errnoOf converts the errno returned by a raw syscall to an error (nil for 0).
func errnoOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// errorAsErrno extracts a syscall.Errno from err (os/exec wraps the fork error).
func errorAsErrno(err error) (syscall.Errno, bool) {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e, true
	}
	return 0, false
}
