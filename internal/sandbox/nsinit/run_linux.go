package nsinit

import (
	"errors"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The helpers run from this package's init function, not from main: a package is
// initialised once its imports are, so the init pays for the Go runtime and this
// package's dependencies but for none of the packages of the binary that re-executed
// itself (the agentbox binary initialises a few milliseconds of packages the init
// never uses: compiled pattern tables, schemas, metrics). The init's main goroutine
// also stays on the process's first thread, the thread group leader, which runs
// package initialisation: the offsets of a time namespace for children are set
// through /proc/self/timens_offsets, which is the leader's (there is no per-thread
// file), so the leader must be the thread that unshares the time namespace and
// forks the commands (see newTimeNamespace). main may already run on another thread.
// It must stay the package's only init function: one in a file that sorts after this
// one would not have run when the helper starts (TestOneInitFunction). Package-level
// variables are initialised before it.
func init() { MaybeRun() }

// MaybeRun runs one of this package's helpers and exits if the process was started as
// one (os.Args[0] is Argv0Init, Argv0Hold or Argv0ProbeOverlay); otherwise it returns
// at once. It runs from this package's init function (see init), so by the time main
// or a TestMain calls it the process is known to be no helper and it returns at once.
func MaybeRun() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case Argv0Init:
		// One thread, the leader (locked by init), does the per-thread steps (the
		// cgroup and time namespaces) and starts the command, which inherits that
		// thread's view.
		runtime.LockOSThread()
		// Executed through a descriptor, the init's name would be the
		// descriptor's number ("7") in ps and top.
		_ = os.WriteFile("/proc/self/comm", []byte(Argv0Init), 0)
		os.Exit(run())
	case Argv0Hold:
		var b [1]byte
		_, _ = os.Stdin.Read(b[:])
		os.Exit(0)
	case Argv0ProbeOverlay:
		os.Exit(probeOverlay())
	}
}

// run is the init. Its order is the hardening order: namespaces (made by the host;
// the cgroup and time namespaces by the init), mounts and pivot_root, hostname and
// loopback (and the egress listener), capabilities dropped, no_new_privs, Landlock, seccomp, rlimits, exec.
// Each step reports the stage that failed.
func run() int {
	st := &status{f: os.NewFile(FDStatus, "status"), uid: os.Getuid(), capEff: effectiveCaps()}
	st.mark("init-start")
	// Non-blocking, the control pipe is read through the runtime's poller: no
	// thread sits in read(2), so the runtime needs no new thread to go on.
	_ = unix.SetNonblock(FDControl, true)
	ctl := os.NewFile(FDControl, "control")
	// Whatever descriptor the host process held without close-on-exec came along
	// (and its own parent's): none may reach the command. CVE-2024-21626 was a
	// leaked host directory descriptor. They cannot simply be closed, as some belong
	// to the Go runtime.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		st.fail(at("close_range", err))
		return 1
	}
	// The host writes the Spec only after it has placed us in the sandbox's
	// cgroup, so this read is also the gate.
	spec, err := ReadSpec(ctl)
	if err != nil {
		st.fail(at("read config", err))
		return 1
	}
	if spec.Build != "" && spec.Build != BuildKey() {
		st.fail(at(StageBuild, errors.New("this agentbox-init was built from other sources than the agentbox that started it: build both from one tree (go build -o DIR/ ./cmd/agentbox ./cmd/agentbox-init) or remove agentbox-init")))
		return 1
	}
	st.mark("config")
	if err := setup(spec, st); err != nil {
		st.fail(err)
		return 1
	}
	if spec.Persistent {
		return serve(st, ctl)
	}
	chld := watchChildren()
	pid, err := startCommand(spec)
	if err != nil {
		if pid != 0 {
			supervise(pid, chld, nil)
		}
		st.fail(err)
		return 1
	}
	st.mark("exec")
	// The init keeps no reference to the command's stdio, so the host's readers see
	// EOF as soon as the sandbox's processes are gone.
	if err := nullStdio(); err != nil {
		_ = unix.Kill(-1, unix.SIGKILL)
		st.fail(err)
		return 1
	}
	ctlc := make(chan byte, 1)
	go readControl(ctl, ctlc)
	ws, ru := supervise(pid, chld, ctlc)
	st.mark("reaped")
	st.send(Message{Kind: KindExit, WaitStatus: uint32(ws), Rusage: ru})
	// Close the pipe now: left to exit, its release would wait until the kernel
	// has torn down the namespaces (unmounting the overlay syncs the upper
	// layer), and the host would wait for nothing.
	_ = st.f.Close()
	return 0
}

// setup does everything between reading the Spec and starting the command.
func setup(s *Spec, st *status) error {
	// The host placed us in our cgroup before sending the Spec; from here on
	// /proc/self/cgroup shows it as the root.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return at("unshare cgroup namespace", err)
	}
	btime, err := newTimeNamespace()
	if err != nil {
		return err
	}
	ignoreSignals()
	buildRoot = s.Image != nil && s.Image.Build
	if err := mountRoot(s, st, btime); err != nil {
		return err
	}
	if err := setHostname(); err != nil {
		return err
	}
	if err := upLoopback(); err != nil {
		return err
	}
	if s.Network != nil {
		if err := openEgress(s.Network); err != nil {
			return err
		}
	}
	st.mark("net")
	if err := dropCaps(); err != nil {
		return err
	}
	if err := setNoNewPrivs(); err != nil {
		return err
	}
	st.mark("caps")
	applied, err := confine(s, st)
	st.landlock = applied.String()
	return err
}

// nullStdio points the init's own stdin, stdout and stderr at /dev/null.
func nullStdio() error {
	fd, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return at("open /dev/null", err)
	}
	defer unix.Close(fd)
	for i := 0; i < 3; i++ {
		if err := unix.Dup3(fd, i, 0); err != nil {
			return at("redirect init stdio", err)
		}
	}
	return nil
}
