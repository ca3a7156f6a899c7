package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

func init() { register("clocks", clocks) }

// clocks reports, in seconds, what the clocks say about how long this machine has
// been up: CLOCK_BOOTTIME and CLOCK_MONOTONIC (read through the vDSO, as every
// program does), sysinfo(2)'s uptime, and this process's start time since boot
// (/proc/self/stat field 22, in 1/100 s).
//
// Attempts: "boottime", "monotonic", "sysinfo-uptime", "self-start" (ok: seconds).
func clocks(args []string) {
	for _, c := range []struct {
		name string
		id   int32
	}{{"boottime", unix.CLOCK_BOOTTIME}, {"monotonic", unix.CLOCK_MONOTONIC}} {
		var ts unix.Timespec
		err := unix.ClockGettime(c.id, &ts)
		report(c.name, err, "%d", ts.Sec)
	}
	var si unix.Sysinfo_t
	err := unix.Sysinfo(&si)
	report("sysinfo-uptime", err, "%d", si.Uptime)
	start, err := statField(fmt.Sprintf("/proc/%d/stat", os.Getpid()), 22)
	var ticks int64
	if err == nil {
		_, err = fmt.Sscan(start, &ticks)
	}
	report("self-start", err, "%d", ticks/100)
}

// statField returns field n (1-based, as in proc(5)) of a /proc/PID/stat file.
func statField(path string, n int) (string, error) {
	b, err := readUpTo(path, 4096)
	if err != nil {
		return "", err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if n-3 >= len(f) || n < 3 {
		return "", unix.EINVAL
	}
	return f[n-3], nil
}
