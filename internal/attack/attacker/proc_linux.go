package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register("proc-scan", procScan)
	register("exe-overwrite", exeOverwrite)
}

// procPids lists the numeric entries of /proc.
func procPids() []int {
	names, _ := listDir("/proc")
	var pids []int
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procScan lists the processes this sandbox can see and looks for TOKEN in every
// command line and environment: the token is in the argv of a process the test started
// on the host, and the secret it passes is in agentbox's own environment.
//
//	proc-scan REVERSED-TOKEN REVERSED-SECRET
//
// Both arrive reversed so that this process's own command line does not match.
//
// Attempts: "pids" (ok: "pid:comm ..."), "token" (ok if TOKEN was found: a host process
// is visible), "secret" (ok if SECRET was found in any /proc/PID/{environ,cmdline}),
// "pid1-environ" and "self-environ" (their content).
func procScan(args []string) {
	if len(args) != 2 {
		usage()
	}
	token, secret := reversed(args[0]), reversed(args[1])
	var list []string
	tokenAt, secretAt := "", ""
	for _, pid := range procPids() {
		comm, _ := readUpTo(fmt.Sprintf("/proc/%d/comm", pid), 256)
		list = append(list, fmt.Sprintf("%d:%s", pid, bytes.TrimSpace(comm)))
		for _, f := range []string{"cmdline", "environ"} {
			b, _ := readUpTo(fmt.Sprintf("/proc/%d/%s", pid, f), 1<<20)
			if bytes.Contains(b, token) {
				tokenAt += fmt.Sprintf("/proc/%d/%s ", pid, f)
			}
			if bytes.Contains(b, secret) {
				secretAt += fmt.Sprintf("/proc/%d/%s ", pid, f)
			}
		}
	}
	ok("pids", "%s", strings.Join(list, " "))
	if tokenAt != "" {
		ok("token", "host process visible at %s", tokenAt)
	} else {
		fail("token", unix.ENOENT)
	}
	if secretAt != "" {
		ok("secret", "secret found at %s", secretAt)
	} else {
		fail("secret", unix.ENOENT)
	}
	for _, a := range []struct{ name, path string }{
		{"pid1-environ", "/proc/1/environ"},
		{"pid1-cmdline", "/proc/1/cmdline"},
		{"self-environ", "/proc/self/environ"},
	} {
		b, err := readUpTo(a.path, 1<<20)
		report(a.name, err, "%s", b)
	}
}

// exeOverwrite mirrors CVE-2019-5736: a contained process opens /proc/PID/exe of the
// runtime (here: pid 1, agentbox's init, and every other visible process) for writing,
// directly and by re-opening an O_PATH descriptor until the binary is no longer busy.
// It never writes: a successful open for write is the escape.
//
//	exe-overwrite MILLIS [PID...]     (no PID: every visible process)
//
// Attempts: "open-wr:PID", "opath:PID", "reopen-wr:PID" (retried for MILLIS).
func exeOverwrite(args []string) {
	if len(args) < 1 {
		usage()
	}
	ms, err := strconv.Atoi(args[0])
	if err != nil {
		usage()
	}
	var pids []int
	for _, a := range args[1:] {
		pid, err := strconv.Atoi(a)
		if err != nil {
			usage()
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		pids = procPids()
	}
	self := os.Getpid()
	paths := map[int]int{}
	for _, pid := range pids {
		exe := fmt.Sprintf("/proc/%d/exe", pid)
		if pid == self {
			exe = "/proc/self/exe"
		}
		fd, err := unix.Open(exe, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		report(fmt.Sprintf("open-wr:%d", pid), err, "opened %s for write", exe)
		pfd, err := unix.Open(exe, unix.O_PATH|unix.O_CLOEXEC, 0)
		report(fmt.Sprintf("opath:%d", pid), err, "O_PATH on %s", exe)
		if err == nil {
			paths[pid] = pfd
		}
	}
	deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
	last := map[int]error{}
	for len(paths) > 0 {
		for pid, pfd := range paths {
			fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_WRONLY|unix.O_CLOEXEC, 0)
			last[pid] = err
			if err == nil {
				unix.Close(fd)
				ok(fmt.Sprintf("reopen-wr:%d", pid), "re-opened the exe of pid %d for write", pid)
				delete(paths, pid)
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for pid := range paths {
		fail(fmt.Sprintf("reopen-wr:%d", pid), last[pid])
	}
}

func reversed(s string) []byte {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return b
}
