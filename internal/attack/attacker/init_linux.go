package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register("init-reach", initReach)
	register("limits", limitsVector)
}

// ioprio_set's "which" values and the idle I/O class (linux/ioprio.h).
const (
	ioprioWhoProcess = 1
	ioprioWhoPgrp    = 2
	ioprioWhoUser    = 3
	ioprioClassIdle  = 3
	ioprioClassShift = 13
)

// initReach tries to change, from inside, the process that holds the sandbox
// together (pid 1, its init): its resource limits, scheduling and I/O priority, CPU
// affinity, and whether it accepts a signal. Where the init and the command share a
// uid the kernel allows all of it: RLIMIT_NOFILE 8 makes the init fail its next
// fork, RLIMIT_CPU 0 gets it SIGKILLed, RLIMIT_NPROC 0 breaks every later exec, and
// RLIMIT_AS 1 MiB is inherited by every later command. The control aims it at a
// host process of its own uid.
//
//	init-reach PID
//
// Attempts: "target" (always ok: the target's and this process's Uid lines),
// "limits-before" and "limits-after" (the target's /proc/PID/limits), "sched-before"
// and "sched-after" (its nice value, policy and Cpus_allowed_list), "kill-0", "pidfd-signal-0",
// "prlimit-read", "setpriority-pid", "setpriority-pgrp", "setpriority-user",
// "sched_setaffinity", "sched_setattr-idle", "sched_setscheduler-idle",
// "ioprio-pid", "ioprio-pgrp", "ioprio-user", "prlimit-as", "prlimit-nproc",
// "prlimit-nofile", "prlimit-cpu" (last: where it works, the target dies of it).
func initReach(args []string) {
	pid := atoiArg(args, 0)
	if pid == 1 && refuseOnHost("init-reach") {
		return
	}
	self, _ := statusField("/proc/self/status", "Uid")
	target, err := statusField(fmt.Sprintf("/proc/%d/status", pid), "Uid")
	report("target", err, "target Uid %s; self Uid %s", target, self)
	limits := fmt.Sprintf("/proc/%d/limits", pid)
	b, err := readLimits(limits)
	report("limits-before", err, "%s", b)
	report("sched-before", nil, "%s", schedOf(pid))

	report("kill-0", unix.Kill(pid, 0), "kill(%d, 0) allowed", pid)
	if fd, err := unix.PidfdOpen(pid, 0); err != nil {
		fail("pidfd-signal-0", err)
	} else {
		report("pidfd-signal-0", unix.PidfdSendSignal(fd, 0, nil, 0), "pidfd_send_signal(%d, 0) allowed", pid)
		unix.Close(fd)
	}
	var old unix.Rlimit
	report("prlimit-read", unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old), "read NOFILE %d/%d", old.Cur, old.Max)

	report("setpriority-pid", unix.Setpriority(unix.PRIO_PROCESS, pid, 19), "nice 19 on pid %d", pid)
	report("setpriority-pgrp", unix.Setpriority(unix.PRIO_PGRP, pid, 19), "nice 19 on process group %d", pid)
	report("setpriority-user", unix.Setpriority(unix.PRIO_USER, 0, 19), "nice 19 on every process of this uid")
	var one unix.CPUSet
	one.Set(0)
	report("sched_setaffinity", unix.SchedSetaffinity(pid, &one), "pid %d pinned to CPU 0", pid)
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	report("sched_setattr-idle", unix.SchedSetAttr(pid, &attr, 0), "pid %d set to SCHED_IDLE", pid)
	report("sched_setscheduler-idle", schedSetschedulerIdle(pid), "pid %d set to SCHED_IDLE", pid)
	idle := uintptr(ioprioClassIdle << ioprioClassShift)
	for _, w := range []struct {
		name       string
		which, who uintptr
	}{{"ioprio-pid", ioprioWhoProcess, uintptr(pid)}, {"ioprio-pgrp", ioprioWhoPgrp, uintptr(pid)}, {"ioprio-user", ioprioWhoUser, uintptr(os.Getuid())}} {
		_, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, w.which, w.who, idle)
		report(w.name, errnoOf(e), "idle I/O class on %s %d", w.name, w.who)
	}

	for _, l := range []struct {
		name string
		res  int
		val  uint64
	}{
		{"prlimit-as", unix.RLIMIT_AS, 1 << 20},
		{"prlimit-nproc", unix.RLIMIT_NPROC, 0},
		{"prlimit-nofile", unix.RLIMIT_NOFILE, 8},
		{"prlimit-cpu", unix.RLIMIT_CPU, 0},
	} {
		rl := unix.Rlimit{Cur: l.val, Max: l.val}
		report(l.name, unix.Prlimit(pid, l.res, &rl, nil), "pid %d now has %d", pid, l.val)
	}

	b, err = readLimits(limits)
	report("limits-after", err, "%s", b)
	report("sched-after", nil, "%s", schedOf(pid))
}

// readLimits condenses a /proc/PID/limits file to one line: "Max cpu time
// unlimited unlimited seconds" becomes "cpu_time=unlimited/unlimited".
func readLimits(path string) (string, error) {
	b, err := readUpTo(path, 8192)
	if err != nil {
		return "", err
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "Max "), "  ")
		f := strings.Fields(rest)
		if !ok || len(f) < 2 || f[0] == "Soft" {
			continue
		}
		out = append(out, strings.ReplaceAll(name, " ", "_")+"="+f[0]+"/"+f[1])
	}
	return strings.Join(out, " "), nil
}

// schedOf describes pid's nice value and policy (/proc/PID/stat fields 19 and 41)
// and its CPU affinity.
func schedOf(pid int) string {
	b, _ := readUpTo(fmt.Sprintf("/proc/%d/stat", pid), 4096)
	out := "stat unreadable"
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		// Fields after the command name start at field 3.
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 38 {
			out = "nice " + f[16] + " policy " + f[38]
		}
	}
	cpus, _ := statusField(fmt.Sprintf("/proc/%d/status", pid), "Cpus_allowed_list")
	return out + " cpus " + cpus
}

// statusField returns the value of key in a /proc/PID/status file.
func statusField(path, key string) (string, error) {
	b, err := readUpTo(path, 1<<16)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == key {
			return strings.Join(strings.Fields(v), " "), nil
		}
	}
	return "", unix.ENOENT
}

// limitsVector reports this process's own limits and scheduling: a command started
// after an attack on the init shows whether anything of it carried over. With
// "lower" it first lowers its own limits (NOFILE 16, AS 8 GiB, nice 10) and
// leaves a child running with them, which must not reach the next command either.
//
//	limits [lower]
//
// Attempts: "lower" (with lower), "nofile", "cpu", "nproc", "as" (ok: "soft
// hard"), "sched" (as schedOf), "fork" (ok if a child could be started).
func limitsVector(args []string) {
	// An environment's init sets a command's hard limits with prlimit just after
	// its execve, and the Go runtime raises its own soft NOFILE to the hard limit
	// it finds at start: read them once that prlimit is surely done.
	time.Sleep(200 * time.Millisecond)
	if len(args) > 0 && args[0] == "lower" {
		err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 16, Max: 16})
		if err == nil {
			// Not much lower: the Go runtime reserves address space generously.
			err = unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: 8 << 30, Max: 8 << 30})
		}
		if err == nil {
			err = unix.Setpriority(unix.PRIO_PROCESS, 0, 10)
		}
		if err == nil {
			_, err = os.StartProcess("/proc/self/exe", []string{"attacker", "sleep", "600000"}, &os.ProcAttr{})
		}
		report("lower", err, "lowered its own limits and left a child with them")
	}
	for _, l := range []struct {
		name string
		res  int
	}{{"nofile", unix.RLIMIT_NOFILE}, {"cpu", unix.RLIMIT_CPU}, {"nproc", unix.RLIMIT_NPROC}, {"as", unix.RLIMIT_AS}} {
		var rl unix.Rlimit
		err := unix.Getrlimit(l.res, &rl)
		report(l.name, err, "%s %s", limitString(rl.Cur), limitString(rl.Max))
	}
	report("sched", nil, "%s", schedOf(os.Getpid()))
	p, err := os.StartProcess("/proc/self/exe", []string{"attacker", "sleep", "0"}, &os.ProcAttr{})
	if err == nil {
		_, err = p.Wait()
	}
	report("fork", err, "started and reaped a child")
}

func limitString(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}
