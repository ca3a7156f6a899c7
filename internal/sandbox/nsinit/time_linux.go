package nsinit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// newTimeNamespace gives the commands a time namespace of their own whose clock
// started with the init: CLOCK_BOOTTIME and CLOCK_MONOTONIC (the vDSO's too),
// /proc/uptime, sysinfo's uptime, the btime of /proc/stat and every process's start
// time count from there, so none of them tells the host's uptime. The init itself
// stays in the host's time namespace (its stamps are compared with the host's
// clock); a command enters the new one at its execve, and the kernel freezes the
// offsets then. It returns the sandbox's boot time in Unix seconds, for the
// generated /proc/stat.
//
// It must run on the thread that starts the commands, as a time namespace for
// children is per thread, and that thread must be the leader: timens_offsets
// exists for the process (the leader's namespace for children) only. Written from
// another thread, the offsets would go to the host's time namespace (EPERM, seen
// now and then before the init pinned its main goroutine; see init).
func newTimeNamespace() (btime int64, err error) {
	if tid := unix.Gettid(); tid != os.Getpid() {
		return 0, at("unshare time namespace", fmt.Errorf("on thread %d, not the leader %d: %w", tid, os.Getpid(), unix.EINVAL))
	}
	start, err := startSeconds()
	if err != nil {
		return 0, at("read init start time", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWTIME); err != nil {
		return 0, at("unshare time namespace", err)
	}
	var rt, boot, mono unix.Timespec
	for _, c := range []struct {
		id int32
		ts *unix.Timespec
	}{{unix.CLOCK_REALTIME, &rt}, {unix.CLOCK_BOOTTIME, &boot}, {unix.CLOCK_MONOTONIC, &mono}} {
		if err := unix.ClockGettime(c.id, c.ts); err != nil {
			return 0, at("clock_gettime", err)
		}
	}
	up := boot.Sec - start // seconds since the init started
	offsets := fmt.Sprintf("monotonic %d 0\nboottime %d 0\n", up-mono.Sec, -start)
	if err := os.WriteFile("/proc/self/timens_offsets", []byte(offsets), 0); err != nil {
		return 0, at("set time namespace offsets", err)
	}
	return rt.Sec - up, nil
}

// startSeconds is when this process started, in whole seconds of CLOCK_BOOTTIME
// (field 22 of /proc/self/stat, in USER_HZ ticks of 1/100 s on Linux).
func startSeconds() (int64, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	if i < 0 || len(f) < 20 {
		return 0, fmt.Errorf("short /proc/self/stat: %w", unix.EINVAL)
	}
	ticks, err := strconv.ParseInt(string(f[19]), 10, 64)
	if err != nil {
		return 0, err
	}
	return ticks / 100, nil
}
