package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func init() { register("fsops", fsops) }

// fsops runs a list of file operations, each "OP:ARG[:ARG]", and reports each as
// RESULT <index>:<op>:<first arg> ok|fail. It is the building block of the file-system
// vectors (writes outside the writable roots, .git through the overlay, planted links,
// rename and hardlink tricks, /proc writes): the test chooses the operations and
// decides which outcomes are escapes.
//
//	read:PATH            read up to 64 KiB (content reported, quoted)
//	readn:PATH           read up to 64 KiB (only the byte count reported)
//	openw:PATH           open O_WRONLY|O_APPEND and write nothing, unless the name
//	                     contains "canary", in which case "PWNED" is appended
//	create:PATH          O_CREAT|O_EXCL, then unlink it again at once
//	createmode:PATH:OCTAL  O_CREAT|O_EXCL with that mode, kept
//	write:PATH:TEXT      O_WRONLY|O_CREAT|O_TRUNC, write TEXT
//	append:PATH:TEXT     O_WRONLY|O_APPEND, write TEXT
//	unlink:PATH, rmdir:PATH, mkdir:PATH, mkfifo:PATH
//	symlink:TARGET:LINK, link:OLD:NEW, rename:OLD:NEW
//	linkfd:OLD:NEW       linkat(/proc/self/fd/N of an O_PATH fd, NEW, AT_SYMLINK_FOLLOW)
//	chmod:PATH:OCTAL, stat:PATH, lstat:PATH, readlink:PATH, ls:PATH
//	mknod:PATH:c|b:MAJOR:MINOR
func fsops(args []string) {
	for i, spec := range args {
		op, rest, _ := strings.Cut(spec, ":")
		parts := strings.Split(rest, ":")
		if op == "write" || op == "append" {
			parts = strings.SplitN(rest, ":", 2) // TEXT may contain ':'
		}
		name := fmt.Sprintf("%d:%s:%s", i, op, parts[0])
		if err := fsop(name, op, parts); err != nil {
			fail(name, err)
		}
	}
}

// fsop runs one operation. It returns an error for a failed call and reports success
// itself.
func fsop(name, op string, p []string) error {
	arg := func(i int) string {
		if i < len(p) {
			return p[i]
		}
		return ""
	}
	switch op {
	case "read", "readn":
		b, err := readUpTo(arg(0), 64<<10)
		if err != nil {
			return err
		}
		if op == "readn" {
			ok(name, "%d bytes", len(b))
		} else {
			ok(name, "%s", b)
		}
	case "openw":
		fd, err := unix.Open(arg(0), unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if strings.Contains(filepath.Base(arg(0)), "canary") {
			unix.Write(fd, []byte("PWNED\n"))
		}
		ok(name, "opened for write")
	case "create":
		fd, err := unix.Open(arg(0), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		unix.Close(fd)
		unix.Unlink(arg(0))
		ok(name, "created (and removed again)")
	case "createmode":
		mode, err := strconv.ParseUint(arg(1), 8, 32)
		if err != nil {
			return err
		}
		fd, err := unix.Open(arg(0), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, uint32(mode))
		if err != nil {
			return err
		}
		unix.Write(fd, []byte("#!/bin/sh\nid\n"))
		unix.Close(fd)
		var st unix.Stat_t
		unix.Stat(arg(0), &st)
		ok(name, "created with mode %o", st.Mode&0o7777)
	case "write", "append":
		flags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
		if op == "append" {
			flags = unix.O_WRONLY | unix.O_APPEND
		}
		fd, err := unix.Open(arg(0), flags|unix.O_CLOEXEC, 0o755)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, []byte(arg(1))); err != nil {
			return err
		}
		ok(name, "wrote %d bytes", len(arg(1)))
	case "unlink":
		return okIf(name, unix.Unlink(arg(0)))
	case "rmdir":
		return okIf(name, unix.Rmdir(arg(0)))
	case "mkdir":
		return okIf(name, unix.Mkdir(arg(0), 0o755))
	case "mkfifo":
		return okIf(name, unix.Mkfifo(arg(0), 0o644))
	case "symlink":
		return okIf(name, unix.Symlink(arg(0), arg(1)))
	case "link":
		return okIf(name, unix.Link(arg(0), arg(1)))
	case "rename":
		return okIf(name, unix.Rename(arg(0), arg(1)))
	case "linkfd":
		fd, err := unix.Open(arg(0), unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return okIf(name, unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, arg(1), unix.AT_SYMLINK_FOLLOW))
	case "chmod":
		mode, err := strconv.ParseUint(arg(1), 8, 32)
		if err != nil {
			return err
		}
		return okIf(name, unix.Chmod(arg(0), uint32(mode)))
	case "stat", "lstat":
		var st unix.Stat_t
		var err error
		if op == "stat" {
			err = unix.Stat(arg(0), &st)
		} else {
			err = unix.Lstat(arg(0), &st)
		}
		if err != nil {
			return err
		}
		ok(name, "mode=%o uid=%d nlink=%d size=%d dev=%d:%d", st.Mode, st.Uid, st.Nlink, st.Size, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	case "readlink":
		buf := make([]byte, 4096)
		n, err := unix.Readlink(arg(0), buf)
		if err != nil {
			return err
		}
		ok(name, "%s", buf[:n])
	case "ls":
		names, err := listDir(arg(0))
		if err != nil {
			return err
		}
		ok(name, "%s", strings.Join(names, " "))
	case "mknod":
		major, _ := strconv.Atoi(arg(2))
		minor, _ := strconv.Atoi(arg(3))
		mode := uint32(unix.S_IFCHR | 0o666)
		if arg(1) == "b" {
			mode = unix.S_IFBLK | 0o666
		}
		return okIf(name, unix.Mknod(arg(0), mode, int(unix.Mkdev(uint32(major), uint32(minor)))))
	default:
		fmt.Fprintf(os.Stderr, "fsops: unknown op %q\n", op)
		os.Exit(2)
	}
	return nil
}

func okIf(name string, err error) error {
	if err == nil {
		ok(name, "done")
	}
	return err
}

// readUpTo reads at most max bytes of path without following a FIFO forever: it opens
// non-blocking.
func readUpTo(path string, max int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, max)
	total := 0
	for total < max {
		n, err := unix.Read(fd, buf[total:])
		if n > 0 {
			total += n
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			if total > 0 {
				break
			}
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return buf[:total], nil
}

// listDir lists a directory with getdents, so that no Go poller descriptor is opened
// (the fd vector counts descriptors).
func listDir(path string) ([]string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readDirFd(fd)
}

func readDirFd(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return names, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
