package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func init() {
	register("xs-a", crossA)
	register("xs-b", crossB)
}

// crossA opens every cross-process channel a second sandbox on the same host could
// try to reach, marks itself ready (its comm becomes "xs-ready", which the test polls
// from the host) and holds them until stdin is closed.
//
//	xs-a TAG KEY     (KEY: the System V IPC key, decimal)
//
// Every name contains "agentbox-xs-a-TAG"; crossB gets TAG and KEY and looks for them.
func crossA(args []string) {
	tag, key := args[0], atoiArg(args, 1)
	name := "agentbox-xs-a-" + tag
	report("shm-file", os.WriteFile("/dev/shm/"+name, []byte("hello"), 0o666), "created /dev/shm/%s", name)
	r, _, e := unix.Syscall(unix.SYS_SHMGET, uintptr(key), 4096, unix.IPC_CREAT|0o666)
	report("shmget", errnoOf(e), "segment %d", r)
	r, _, e = unix.Syscall(unix.SYS_MSGGET, uintptr(key), unix.IPC_CREAT|0o666, 0)
	report("msgget", errnoOf(e), "queue %d", r)
	r, _, e = unix.Syscall(unix.SYS_SEMGET, uintptr(key), 1, unix.IPC_CREAT|0o666)
	report("semget", errnoOf(e), "semaphores %d", r)
	mq, err := mqOpen("/"+name, unix.O_CREAT)
	report("mq", err, "queue fd %d", mq)
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.Bind(s, &unix.SockaddrUnix{Name: "@" + name}); err == nil {
			err = unix.Listen(s, 8)
		}
	}
	report("abstract-listen", err, "listening on @%s", name)
	lf, err := unix.Open("/workspace/lockfile", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Flock(lf, unix.LOCK_EX)
	}
	report("flock", err, "holding an exclusive lock on /workspace/lockfile")
	id, err := addKey(name, []byte("secret"), unix.KEY_SPEC_USER_KEYRING)
	report("add-key", err, "key %d", id)
	unix.Prctl(unix.PR_SET_NAME, uintptr(bytePtr("xs-ready")), 0, 0, 0)
	io.Copy(io.Discard, os.Stdin)
}

// crossB runs in a second sandbox while crossA holds its channels and tries each one.
// Every attempt should fail, except the flock, which should succeed (each overlay has
// its own inode, so A's lock must not block B).
//
//	xs-b TAG KEY
func crossB(args []string) {
	tag, key := args[0], atoiArg(args, 1)
	name := "agentbox-xs-a-" + tag
	_, err := os.ReadFile("/dev/shm/" + name)
	report("shm-file", err, "read A's /dev/shm file")
	r, _, e := unix.Syscall(unix.SYS_SHMGET, uintptr(key), 0, 0)
	report("shmget", errnoOf(e), "found A's segment %d", r)
	r, _, e = unix.Syscall(unix.SYS_MSGGET, uintptr(key), 0, 0)
	report("msgget", errnoOf(e), "found A's queue %d", r)
	r, _, e = unix.Syscall(unix.SYS_SEMGET, uintptr(key), 0, 0)
	report("semget", errnoOf(e), "found A's semaphores %d", r)
	mq, err := mqOpen("/"+name, 0)
	report("mq", err, "opened A's queue %d", mq)
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Connect(s, &unix.SockaddrUnix{Name: "@" + name})
	}
	report("abstract-connect", err, "connected to A's @%s", name)
	lf, err := unix.Open("/workspace/lockfile", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Flock(lf, unix.LOCK_EX|unix.LOCK_NB)
	}
	report("flock", err, "took the exclusive lock (A's lock did not reach B)")
	r, _, e = unix.Syscall6(unix.SYS_KEYCTL, unix.KEYCTL_SEARCH, uintptr(unix.KEY_SPEC_USER_KEYRING&0xffffffff),
		uintptr(bytePtr("user")), uintptr(bytePtr(name)), 0, 0)
	report("key-search", errnoOf(e), "found A's key %d", r)
	id, err := addKey("agentbox-xs-b-"+tag, []byte("x"), unix.KEY_SPEC_USER_KEYRING)
	report("add-key", err, "key %d", id)
	var seen []string
	for _, pid := range procPids() {
		b, _ := readUpTo(fmt.Sprintf("/proc/%d/cmdline", pid), 4096)
		if bytes.Contains(b, []byte("xs-a\x00"+tag)) {
			seen = append(seen, strconv.Itoa(pid))
		}
	}
	if len(seen) > 0 {
		ok("proc", "A's processes visible: %v", seen)
	} else {
		fail("proc", unix.ENOENT)
	}
}
