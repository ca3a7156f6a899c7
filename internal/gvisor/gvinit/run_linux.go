package gvinit

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// init runs a helper before the rest of the binary initialises (as nsinit's).
func init() { MaybeRun() }

// MaybeRun runs the helper and exits if the process was started as one
// (os.Args[0] is Path); otherwise it returns at once.
func MaybeRun() {
	if len(os.Args) < 2 || os.Args[0] != Path {
		return
	}
	switch os.Args[1] {
	case ModeInit:
		os.Exit(initMode())
	case ModeExec:
		os.Exit(execMode())
	case ModeNS:
		os.Exit(nsMode())
	}
	os.Exit(2)
}

// initMode is the environment's init: it says it runs (a line on stdout, which
// the host waits for), then reaps whatever is reparented to it.
func initMode() int {
	os.Stdout.WriteString("ready\n")
	os.Stdout.Close()
	for {
		if _, err := unix.Wait4(-1, nil, 0, nil); err == unix.ECHILD {
			unix.Pause() // the runtime's SIGCHLD handler wakes it
		}
	}
}

// execMode starts the namespace's init in a new PID namespace and relays the
// host's signals to it until it is gone. The command's processes cannot signal
// it: it is root, they are not.
func execMode() int {
	unix.CloseOnExec(FDReport)
	unix.CloseOnExec(FDControl)
	report := os.NewFile(FDReport, "report")
	ctl := os.NewFile(FDControl, "control")
	if len(os.Args) != 3 {
		writeReport(report, Report{StartErr: "gvinit: no config"})
		return 2
	}
	cmd := exec.Command(Path, ModeNS, os.Args[2])
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{report} // FDReport again
	// No parent-death signal: gVisor sends it when the forking thread ends, not
	// the process. This helper is root; the command's processes cannot kill it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		writeReport(report, Report{StartErr: "gvinit: " + err.Error()})
		return 2
	}
	report.Close()
	go func() {
		sc := bufio.NewScanner(ctl)
		for sc.Scan() {
			if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && n > 0 && n < 65 {
				cmd.Process.Signal(syscall.Signal(n))
			}
		}
		// The host is gone or ends the command: so does the namespace.
		cmd.Process.Kill()
	}()
	cmd.Wait()
	return 0
}

// nsMode is PID 1 of the command's namespace: it starts the command, forwards
// every signal it gets to every process of the namespace, reaps them, and
// reports once the main process has exited. Its exit ends the namespace: the
// kernel kills what is left of the command.
func nsMode() int {
	unix.CloseOnExec(FDReport)
	report := os.NewFile(FDReport, "report")
	var cfg Config
	if len(os.Args) != 3 || json.Unmarshal([]byte(os.Args[2]), &cfg) != nil || len(cfg.Argv) == 0 {
		writeReport(report, Report{StartErr: "gvinit: bad config"})
		return 2
	}
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs)
	// The command keeps no capability: none in its bounding set, and its uid
	// change clears the rest.
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
	for _, l := range cfg.Rlimits {
		if err := unix.Setrlimit(l.Resource, &unix.Rlimit{Cur: l.Soft, Max: l.Hard}); err != nil {
			writeReport(report, Report{StartErr: "gvinit: rlimit " + strconv.Itoa(l.Resource) + ": " + err.Error()})
			return 2
		}
	}
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Args = cfg.Argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: cfg.UID, Gid: cfg.GID, Groups: []uint32{}},
		Setsid:     true,
	}
	if err := cmd.Start(); err != nil {
		writeReport(report, Report{StartErr: startErr(err)})
		return 1
	}
	main := cmd.Process.Pid
	go func() {
		for s := range sigs {
			if s == syscall.SIGCHLD || s == syscall.SIGURG { // the runtime's own
				continue
			}
			unix.Kill(-1, s.(syscall.Signal)) // every process of the namespace but this one
		}
	}()
	var r Report
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			writeReport(report, Report{StartErr: "gvinit: wait: " + err.Error()})
			return 2
		}
		r.UserNS += ru.Utime.Nano()
		r.SysNS += ru.Stime.Nano()
		r.MaxRSSKB = max(r.MaxRSSKB, ru.Maxrss)
		if pid == main {
			r.Status = uint32(ws)
			writeReport(report, r)
			return 0
		}
	}
}

// startErr classifies why the command could not start.
func startErr(err error) string {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return StartNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		return StartNotExecutable
	}
	return err.Error()
}

func writeReport(f *os.File, r Report) {
	b, _ := json.Marshal(r)
	f.Write(append(b, '\n'))
}
