package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register("ptrace", ptraceVector)
	register("killall", killAll)
}

// ptraceVector attacks pid 1 (agentbox's init, which holds the sandbox together) and a
// host process by its host pid number: ptrace, process_vm_readv/writev, /proc/PID/mem,
// prlimit, kill and pidfd_send_signal. process_vm_* target an unmapped address: EFAULT
// means the permission check passed, which is the escape, without writing anything.
//
//	ptrace HOSTPID
//
// Attempts: "TARGET:attach|seize|vm-read|vm-write|mem|prlimit|kill0|kill-term|kill-kill|
// pidfd-kill" for TARGET in init and host; "init-alive" (ok if pid 1 kept its start
// time).
func ptraceVector(args []string) {
	if len(args) != 1 {
		usage()
	}
	hostPid, err := strconv.Atoi(args[0])
	if err != nil {
		usage()
	}
	runtime.LockOSThread()
	start1 := startTime(1)
	targets := []struct {
		name string
		pid  int
	}{{"init", 1}}
	if hostPid != os.Getpid() && hostPid != 1 {
		targets = append(targets, struct {
			name string
			pid  int
		}{"host", hostPid})
	}
	for _, t := range targets {
		at := func(s string) string { return t.name + ":" + s }
		err := unix.PtraceAttach(t.pid)
		if err == nil {
			unix.PtraceDetach(t.pid)
		}
		report(at("attach"), err, "attached to %d", t.pid)
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(t.pid), 0, 0, 0, 0)
		if e == 0 {
			unix.PtraceDetach(t.pid)
		}
		report(at("seize"), errnoOf(e), "seized %d", t.pid)
		_, err = processVMRead(t.pid, 0x1000, 1)
		report(at("vm-read"), permissionOnly(err), "read access to the memory of %d", t.pid)
		report(at("vm-write"), permissionOnly(processVMWrite(t.pid, 0x1000)), "write access to the memory of %d", t.pid)
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/mem", t.pid), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		report(at("mem"), err, "opened /proc/%d/mem read-write", t.pid)
		var rl unix.Rlimit
		report(at("prlimit"), unix.Prlimit(t.pid, unix.RLIMIT_NOFILE, nil, &rl), "prlimit permitted on %d", t.pid)
		report(at("kill0"), unix.Kill(t.pid, 0), "may signal %d", t.pid)
		sig := unix.SIGTERM
		if t.name == "host" {
			sig = unix.SIGUSR1 // recorded by the host victim
		}
		report(at("kill-term"), unix.Kill(t.pid, sig), "sent %v to %d", sig, t.pid)
		report(at("kill-kill"), unix.Kill(t.pid, unix.SIGKILL), "sent SIGKILL to %d", t.pid)
		if pfd, err := unix.PidfdOpen(t.pid, 0); err != nil {
			fail(at("pidfd-kill"), err)
		} else {
			report(at("pidfd-kill"), unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0), "pidfd SIGKILL sent to %d", t.pid)
			unix.Close(pfd)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if now := startTime(1); now != "" && now == start1 {
		ok("init-alive", "pid 1 still running (start %s)", now)
	} else {
		fail("init-alive", unix.ESRCH)
	}
}

// permissionOnly maps EFAULT (the call was permitted, the address was bad) to success.
func permissionOnly(err error) error {
	if err == unix.EFAULT || err == unix.EIO {
		return nil
	}
	return err
}

// startTime returns field 22 of /proc/PID/stat ("" if unreadable).
func startTime(pid int) string {
	b, err := readUpTo(fmt.Sprintf("/proc/%d/stat", pid), 4096)
	if err != nil {
		return ""
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		f := bytes.Fields(b[i+1:])
		if len(f) > 19 {
			return string(f[19])
		}
	}
	return ""
}

// killAll sends SIGUSR1 then SIGKILL to every process it may signal (kill(-1, …)):
// inside a pid namespace that must be only the sandbox's own processes. Given
// MAXDELAYMS, it first waits until its stdin ends (at most that long), so that the
// test can start a host victim under this run's host uid and then close it.
//
//	killall [MAXDELAYMS]
func killAll(args []string) {
	if refuseOnHost("killall") {
		return
	}
	if len(args) > 0 {
		eof := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(eof)
		}()
		select {
		case <-eof:
		case <-time.After(time.Duration(atoiArg(args, 0)) * time.Millisecond):
		}
	}
	report("kill-1-usr1", unix.Kill(-1, unix.SIGUSR1), "kill(-1, SIGUSR1) accepted")
	time.Sleep(50 * time.Millisecond)
	report("kill-1-kill", unix.Kill(-1, unix.SIGKILL), "kill(-1, SIGKILL) accepted")
	time.Sleep(50 * time.Millisecond)
}
