package landlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// victimEnv holds the JSON victimSpec when the test binary runs as the victim.
const victimEnv = "AGENTBOX_LANDLOCK_VICTIM"

// victimSpec is what the parent test asks the victim to do.
type victimSpec struct {
	Restrict bool // false: control run without Landlock
	ABI      int  // 0: Restrict; otherwise restrictAt this ABI
	Ruleset  Ruleset
	A, A2, B string // A and A2 are ReadWrite in the rulesets, B is not
	TCPPort  int    // a listener the parent holds on 127.0.0.1
	Abstract string // an abstract unix socket the parent listens on
	Parent   int
	// Exec: restrict with Exec, which re-executes the test binary as a second
	// victim that runs the probes; that one gets Inherited and FDs.
	Exec      bool
	Inherited *Applied // what the first victim's Preview reported
	FDs       []int    // the files opened before restriction, passed across execve
}

type victimResult struct {
	Applied Applied
	Err     string            // Restrict's error; no probe ran
	Took    time.Duration     // how long Restrict took
	Probes  map[string]string // probe name: "ok", an errno name, or "exit N"
}

// runVictim runs in the re-executed test binary: it restricts itself, tries every
// probe, and prints the outcomes as JSON. The parent judges them.
func runVictim(specJSON string) int {
	var spec victimSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "victim: bad spec:", err)
		return 2
	}
	a, a2, b := spec.A, spec.A2, spec.B

	// Opened before Restrict: Landlock checks rights at open, so these keep theirs.
	var pre [3]*os.File
	if len(spec.FDs) == len(pre) {
		for i, fd := range spec.FDs {
			pre[i] = os.NewFile(uintptr(fd), "inherited")
		}
	} else {
		var err1, err2, err3 error
		pre[0], err1 = os.Open(filepath.Join(b, "reopen"))
		pre[1], err2 = os.OpenFile(filepath.Join(b, "oldfd"), os.O_WRONLY|os.O_APPEND, 0)
		pre[2], err3 = os.OpenFile("/dev/null", os.O_RDWR, 0)
		if err := errors.Join(err1, err2, err3); err != nil {
			fmt.Fprintln(os.Stderr, "victim: setup:", err)
			return 2
		}
	}
	roFD, oldFD, oldDev := pre[0], pre[1], pre[2]
	if spec.Exec {
		return execVictim(spec, pre[:])
	}

	// Two OS threads that exist before Restrict: every thread must be covered, and
	// below ABI 8 each one ends up in a domain of its own (go-landlock issue 36).
	w0, w1 := newWorker(), newWorker()
	defer w0.stop()
	defer w1.stop()

	res := victimResult{Probes: map[string]string{}}
	if spec.Inherited != nil {
		res.Applied = *spec.Inherited
	}
	if spec.Restrict {
		var err error
		start := time.Now()
		if spec.ABI == 0 {
			res.Applied, err = Restrict(spec.Ruleset)
		} else {
			res.Applied, err = restrictAt(spec.Ruleset, spec.ABI)
		}
		res.Took = time.Since(start)
		if err != nil {
			res.Err = err.Error()
			return printResult(res)
		}
	}

	sh := func(script string) error {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = []string{"A=" + a, "B=" + b, "PATH=/usr/bin:/bin"}
		return cmd.Run()
	}
	writeFile := func(path string, flag int) error {
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString("pwned")
		return errors.Join(err, f.Close())
	}
	probes := []struct {
		name string
		fn   func() error
	}{
		{"write-inside", func() error { return writeFile(filepath.Join(a, "new"), os.O_CREATE|os.O_WRONLY) }},
		{"rename-within-rw", func() error { return os.Rename(filepath.Join(a, "s1", "f"), filepath.Join(a, "s2", "f")) }},
		{"rename-rw-to-rw", func() error { return os.Rename(filepath.Join(a, "f2"), filepath.Join(a2, "f2")) }},
		{"create-outside", func() error { return writeFile(filepath.Join(b, "new"), os.O_CREATE|os.O_EXCL|os.O_WRONLY) }},
		{"write-outside", func() error { return writeFile(filepath.Join(b, "write"), os.O_WRONLY) }},
		{"truncate-outside", func() error { return unix.Truncate(filepath.Join(b, "trunc"), 0) }},
		{"rename-out", func() error { return os.Rename(filepath.Join(a, "moveme"), filepath.Join(b, "moveme")) }},
		{"link-out", func() error { return os.Link(filepath.Join(a, "linkme"), filepath.Join(b, "linkme")) }},
		{"link-in", func() error { return os.Link(filepath.Join(b, "ro"), filepath.Join(a, "linked")) }},
		{"mkdir-outside", func() error { return os.Mkdir(filepath.Join(b, "dir"), 0o755) }},
		{"remove-outside", func() error { return os.Remove(filepath.Join(b, "removeme")) }},
		{"reopen-proc-fd", func() error { return writeFile(fmt.Sprintf("/proc/self/fd/%d", roFD.Fd()), os.O_WRONLY) }},
		{"old-fd-write", func() error { _, err := oldFD.WriteString("pwned"); return err }},
		{"read-hostname", func() error { _, err := os.ReadFile("/etc/hostname"); return err }},
		{"exec-true", func() error { return exec.Command("/bin/true").Run() }},
		{"sh-inside", func() error {
			return sh(`set -e; echo hi > "$A/sh"; cat /etc/hostname >/dev/null; ls / | wc -l >/dev/null
				mkfifo "$A/fifo"; ln -s sh "$A/sym"; mkdir "$A/d"; mv "$A/sh" "$A/d/sh"; rm -r "$A/d"; echo hi > "$A/sh"`)
		}},
		{"sh-outside", func() error { return sh(`echo x > "$B/sh"`) }},
		{"devnull-write", func() error { return writeFile("/dev/null", os.O_WRONLY) }},
		{"devzero-write", func() error { return writeFile("/dev/zero", os.O_WRONLY) }},
		{"ioctl-new-dev", func() error {
			f, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
			return err
		}},
		{"ioctl-old-dev", func() error { _, err := unix.IoctlGetTermios(int(oldDev.Fd()), unix.TCGETS); return err }},
		{"tcp-connect", func() error { return tcpProbe(unix.IPPROTO_TCP, spec.TCPPort, false) }},
		{"tcp-bind", func() error { return tcpProbe(unix.IPPROTO_TCP, 0, true) }},
		{"mptcp-connect", func() error { return tcpProbe(unix.IPPROTO_MPTCP, spec.TCPPort, false) }},
		{"signal-parent-0", func() error { return unix.Kill(spec.Parent, 0) }},
		{"signal-parent-usr1", func() error { return unix.Kill(spec.Parent, unix.SIGUSR1) }},
		{"signal-own-child", func() error {
			var pid int
			if err := w0.run(func() (err error) { pid, err = startSleep(); return err }); err != nil {
				return err
			}
			return w0.run(func() error { return killReap(pid) })
		}},
		{"signal-child-other-thread", func() error {
			var pid int
			if err := w0.run(func() (err error) { pid, err = startSleep(); return err }); err != nil {
				return err
			}
			err := w1.run(func() error { return killReap(pid) })
			if err != nil {
				w0.run(func() error { return killReap(pid) }) // the forking thread may
			}
			return err
		}},
		{"abstract-connect", func() error { return dialClose("@" + spec.Abstract) }},
		{"abstract-own", func() error {
			return w0.run(func() error { return listenDial(spec.Abstract+"-own", nil) })
		}},
		{"abstract-other-thread", func() error {
			return w0.run(func() error { return listenDial(spec.Abstract+"-other", w1) })
		}},
		{"thread-pre-restrict", func() error {
			return w1.run(func() error { return writeFile(filepath.Join(b, "thread"), os.O_CREATE|os.O_WRONLY) })
		}},
	}
	for _, p := range probes {
		res.Probes[p.name] = outcome(p.fn())
	}
	return printResult(res)
}

// execVictim re-executes the test binary through Exec, passing the files opened
// before restriction across execve, as a sandbox would leak them if it forgot to.
func execVictim(spec victimSpec, files []*os.File) int {
	applied, err := Preview(spec.Ruleset)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim: preview:", err)
		return 2
	}
	next := spec
	next.Exec, next.Restrict, next.Inherited = false, false, &applied
	for _, f := range files {
		if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
			fmt.Fprintln(os.Stderr, "victim: clear close-on-exec:", err)
			return 2
		}
		next.FDs = append(next.FDs, int(f.Fd()))
	}
	js, err := json.Marshal(next)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 2
	}
	env := []string{victimEnv + "=" + string(js)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, victimEnv+"=") {
			env = append(env, kv)
		}
	}
	err = Exec(spec.Ruleset, os.Args[0], []string{os.Args[0], "-test.run=^$"}, env)
	fmt.Fprintln(os.Stderr, "victim: Exec:", err)
	return 2
}

func printResult(res victimResult) int {
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 2
	}
	return 0
}

// tcpProbe binds to 127.0.0.1:0, or connects to 127.0.0.1:port, with raw syscalls so
// that the protocol is exactly the one asked for (net.Listen would pick MPTCP).
func tcpProbe(proto, port int, bind bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	addr := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if bind {
		return unix.Bind(fd, addr)
	}
	return unix.Connect(fd, addr)
}

func dialClose(addr string) error {
	c, err := net.Dial("unix", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

func outcome(err error) string {
	var errno syscall.Errno
	var exit *exec.ExitError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	case errors.As(err, &exit):
		return fmt.Sprintf("exit %d", exit.ExitCode())
	}
	return "error: " + err.Error()
}

// worker runs functions on one OS thread of its own.
type worker struct {
	ops  chan func() error
	errs chan error
}

func newWorker() *worker {
	w := &worker{ops: make(chan func() error), errs: make(chan error)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		close(ready)
		for op := range w.ops {
			w.errs <- op()
		}
	}()
	<-ready
	return w
}

func (w *worker) run(op func() error) error { w.ops <- op; return <-w.errs }
func (w *worker) stop()                     { close(w.ops) }

// startSleep forks on the calling thread, so the child gets that thread's domain.
func startSleep() (int, error) {
	var attr syscall.ProcAttr
	return syscall.ForkExec("/bin/sleep", []string{"sleep", "10"}, &attr)
}

func killReap(pid int) error {
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		return err
	}
	_, err := unix.Wait4(pid, nil, 0, nil)
	return err
}

// listenDial listens on an abstract socket from the calling thread and connects to
// it from the calling thread (other == nil) or from other's thread.
func listenDial(name string, other *worker) error {
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		return err
	}
	defer l.Close()
	dial := func() error { return dialClose("@" + name) }
	if other == nil {
		return dial()
	}
	return other.run(dial)
}
