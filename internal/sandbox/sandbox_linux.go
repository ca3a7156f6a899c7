package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// Sandbox is one running sandbox. Its methods are safe for concurrent use.
type Sandbox struct {
	cfg          Config
	id           *identity
	cg           *cgroup.Cgroup
	cmd          *exec.Cmd
	state        string     // private directory holding upper/ and work/; "" without overlay
	stateMounted bool       // state is a tmpfs mounted by Start
	stateLocks   []*os.File // hold state's flocks while the sandbox lives (see ReapStale)

	ctlMu sync.Mutex
	ctl   *os.File // write end of the init's control pipe; nil once closed

	cl *client // persistent sandboxes only: the init's exec socket

	egress *egressServer // sandboxes with a Network only

	unspawn func() // called once the init is reaped (see spawn)

	startNS   int64
	initStart uint64 // the init's start time (see Leftover)
	stampMu   sync.Mutex
	stamps    []nsinit.Stamp

	statusDone chan struct{}
	report     *nsinit.Message // last message from the init; read after statusDone

	waitOnce sync.Once
	reapOnce sync.Once
	exit     Exit
	waitErr  error

	killed    atomic.Bool
	destroyMu sync.Mutex // held by Destroy
	destroyed atomic.Bool
}

// Start starts cfg.Argv in a new sandbox with the given stdio and returns once the
// init runs in its cgroup and has its configuration; setup continues in the init
// and its failures are reported by Wait.
//
// The init is forked by a thread that lives as long as the process (see spawn):
// its parent-death signal fires when agentbox dies, never earlier.
func Start(cfg Config, stdio Stdio) (_ *Sandbox, err error) {
	t0 := monoNow()
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, startNS: t0, statusDone: make(chan struct{})}
	var childFiles []*os.File // the init's ends, closed here once it has them
	defer func() {
		for _, f := range childFiles {
			f.Close()
		}
		if err != nil {
			s.abort()
		}
	}()
	if err := requireMechanisms(); err != nil {
		return nil, err
	}
	switch {
	case cfg.build != nil:
		s.id, err = buildIdentity()
	case cfg.From != nil:
		s.id, err = s.takeLeftover(*cfg.From)
	default:
		s.id, err = newIdentity()
	}
	if err != nil {
		return nil, err
	}
	if cfg.Keep != "" && s.id.reserve != "" {
		if err := markKept(s.id.reserve, cfg.Keep); err != nil {
			return nil, err
		}
	}
	cgName, err := cgroupName()
	if err != nil {
		return nil, err
	}
	// Recorded before it exists, so that ReapStale finds it whenever we die.
	if err := s.id.record(cgName); err != nil {
		return nil, err
	}
	if s.cg, err = newCgroup(cfg, cgName); err != nil {
		return nil, err
	}

	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.ctl = ctlW
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		return nil, err
	}
	childFiles = append(childFiles, ctlR, stW)
	if cfg.Persistent {
		var serveEnd *os.File
		if s.cl, serveEnd, err = newClient(s); err != nil {
			return nil, err
		}
		childFiles = append(childFiles, serveEnd) // nsinit.FDServe
	}
	defer func() {
		if s.cmd == nil { // readStatus never took it
			stR.Close()
		}
	}()
	// add passes one more file to the init and returns its number there.
	add := func(f *os.File) int {
		childFiles = append(childFiles, f)
		return len(childFiles) + 2
	}
	env := cfg.Env
	if cfg.Network != nil && !cfg.Persistent {
		env = NetworkEnv(env, cfg.Network.Port)
	}
	spec := &nsinit.Spec{
		Persistent: cfg.Persistent,
		Argv:       cfg.Argv,
		Env:        env,
		Dir:        cfg.Dir,
		TmpSize:    cfg.TmpSize,
		ShmSize:    cfg.ShmSize,
		Rlimits:    cfg.Rlimits.spec(),
		Landlock:   ruleset(&cfg),
	}
	program := filter
	if cfg.WorkspaceWrite {
		program = writeFilter
	}
	if spec.Seccomp, err = program(); err != nil {
		return nil, err
	}
	if spec.Workspace, err = s.prepareWorkspace(add); err != nil {
		return nil, err
	}
	if spec.RootFS, err = s.prepareRootFS(add); err != nil {
		return nil, err
	}
	if spec.Image, err = s.prepareImage(add); err != nil {
		return nil, err
	}
	if cfg.Network != nil {
		if s.egress, spec.Network, err = newEgress(cfg.Network, add); err != nil {
			return nil, err
		}
	}
	if spec.Mounts, err = s.prepareMounts(add); err != nil {
		return nil, err
	}
	s.mark("prepare")

	if err := s.id.giveStdio(stdio); err != nil {
		return nil, err
	}
	initBin, err := initBinary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.ExtraFiles = childFiles
	if initBin != nil {
		// Executed through its descriptor, passed as the init's last file.
		cmd.ExtraFiles = append(slices.Clip(childFiles), initBin)
		cmd.Path = "/proc/self/fd/" + strconv.Itoa(len(cmd.ExtraFiles)+2)
		spec.Build = nsinit.BuildKey()
	}
	cmd.Args = []string{nsinit.Argv0Init}
	// The init serves from one thread (see nsinit's server): one P makes the
	// runtime start fewer threads and keep less per-P memory, 0.2 MB of an
	// idle environment's 1.8 (BENCHMARKS.md, density). Its commands get their
	// own environment, not this one.
	cmd.Env = []string{"GOMAXPROCS=1"}
	cmd.Dir = "/"
	if stdio.Stdin != nil {
		cmd.Stdin = stdio.Stdin
	}
	if stdio.Stdout != nil {
		cmd.Stdout = stdio.Stdout
	}
	if stdio.Stderr != nil {
		cmd.Stderr = stdio.Stderr
	}
	cmd.SysProcAttr = s.id.sysProcAttr()
	if s.unspawn, err = spawn(cmd); err != nil {
		return nil, &MissingError{Mechanism: "clone into new namespaces", Err: err}
	}
	s.cmd = cmd
	if cfg.Keep != "" {
		s.initStart, _, _ = procStart(cmd.Process.Pid) // it cannot have been reaped yet
	}
	// The init has its ends now. Closed here, they close when it dies: the
	// status pipe's EOF and the exec socket's tell Start of an init that died
	// in setup at once, not at readyTimeout (seen: an init whose overlay mount
	// failed made Start wait a minute for a reply it had already given up on).
	for _, f := range childFiles {
		f.Close()
	}
	childFiles = nil
	go s.readStatus(stR)
	s.mark("clone")

	// The init blocks reading its Spec; only once it is in the cgroup does it get
	// one, so nothing it does escapes the cgroup's limits and kill.
	if err := s.cg.AddProc(cmd.Process.Pid); err != nil {
		return nil, fmt.Errorf("place init in cgroup: %w", err)
	}
	s.mark("cgroup")
	if err := writeSpec(s, ctlW, spec); err != nil {
		return nil, err
	}
	s.mark("send-config")
	if cfg.Persistent {
		if err := s.cl.awaitReady(); err != nil {
			return nil, err
		}
		s.mark("ready")
	}
	return s, nil
}

// fill validates c and fills in defaults.
func (c *Config) fill() error {
	switch {
	case c.Persistent && (len(c.Argv) > 0 || len(c.Env) > 0 || c.Dir != ""):
		return errors.New("sandbox: a persistent sandbox takes no command, environment or directory (Exec does)")
	case !c.Persistent && (len(c.Argv) == 0 || c.Argv[0] == ""):
		return errors.New("sandbox: empty command")
	case c.From != nil && (c.Workspace == "" || c.WorkspaceWrite):
		return errors.New("sandbox: From takes over an overlay workspace's upper layer: give the Workspace, without WorkspaceWrite")
	}
	if !c.Persistent {
		c.Env, c.Dir = imageEnv(c.Image, c.Env, c.Dir)
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("sandbox: working directory %q is not absolute", c.Dir)
	}
	if c.TmpSize <= 0 {
		c.TmpSize = DefaultTmpSize
	}
	if c.ShmSize <= 0 {
		c.ShmSize = DefaultShmSize
	}
	if c.WorkspaceSize <= 0 {
		c.WorkspaceSize = DefaultWorkspaceSize
	}
	if c.RootSize <= 0 {
		c.RootSize = DefaultRootSize
	}
	for _, l := range []struct {
		name string
		v    *int64
		def  int64
	}{{"memory", &c.Memory, DefaultMemory()}, {"pids", &c.Pids, DefaultPids}} {
		switch {
		case *l.v == 0:
			*l.v = l.def
		case *l.v < 0 && *l.v != Unlimited:
			return fmt.Errorf("sandbox: %s limit %d: give a positive limit, 0 for the default or Unlimited", l.name, *l.v)
		}
	}
	return nil
}

// spec converts the limits for the init; RLIMIT_CORE is always 0.
func (r Rlimits) spec() []nsinit.Rlimit {
	out := []nsinit.Rlimit{{Resource: unix.RLIMIT_CORE}}
	for _, l := range []struct {
		res int
		lim Rlimit
	}{
		{unix.RLIMIT_CPU, r.CPU},
		{unix.RLIMIT_FSIZE, r.FSize},
		{unix.RLIMIT_NOFILE, r.NoFile},
		{unix.RLIMIT_NPROC, r.NProc},
		{unix.RLIMIT_AS, r.AS},
	} {
		if l.lim == (Rlimit{}) {
			continue
		}
		hard := l.lim.Hard
		if hard == 0 {
			hard = l.lim.Soft
		}
		out = append(out, nsinit.Rlimit{Resource: l.res, Cur: l.lim.Soft, Max: hard})
	}
	return out
}

// writeSpec sends the init its Spec; a test replaces it to kill the init
// before it has anything to report.
var writeSpec = defaultWriteSpec

func defaultWriteSpec(_ *Sandbox, w io.Writer, spec *nsinit.Spec) error {
	return nsinit.WriteSpec(w, spec)
}

// abortHook, if set by a test, sees a failed Start's sandbox before it is undone.
var abortHook func(*Sandbox)

// abort undoes a Start that failed part way.
func (s *Sandbox) abort() {
	if abortHook != nil {
		abortHook(s)
	}
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.statusDone
		s.reapInit()
	}
	s.closeControl()
	if s.cl != nil {
		s.cl.close()
	}
	if s.egress != nil {
		s.egress.close()
	}
	if s.cg != nil {
		_ = s.cg.Kill()
		_ = s.cg.Delete()
	}
	if s.cfg.From != nil {
		// The leftover stays as it was, for another Start or Discard.
		for _, f := range s.stateLocks {
			f.Close()
		}
		s.stateLocks = nil
		if s.id != nil && s.id.lock != nil {
			s.id.lock.Close()
		}
		return
	}
	_ = s.removeState()
	if s.id != nil {
		s.id.release()
	}
}

// Pid returns the host pid of the sandbox's init.
func (s *Sandbox) Pid() int { return s.cmd.Process.Pid }

// HostUID returns the host uid (and gid) the sandbox user maps to.
func (s *Sandbox) HostUID() int { return s.id.uid }

// UpperDir returns the overlay's private upper layer on the host, or "" when the
// workspace is not an overlay. It exists until Destroy; read it after Kill, when
// nothing can write to it any more.
func (s *Sandbox) UpperDir() string {
	if s.state == "" || s.cfg.Workspace == "" || s.cfg.WorkspaceWrite {
		return ""
	}
	return filepath.Join(s.state, "upper")
}

// RootFull reports whether the sandbox's image root is full: its private
// upper layer has less than 64 KiB of Config.RootSize left (a write past the
// limit failed with ENOSPC). Without an image it is false.
func (s *Sandbox) RootFull() bool {
	if s.state == "" || s.cfg.Image == nil {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(s.state, "root"), &st); err != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < 64<<10
}

// mark records the end of a host-side phase.
func (s *Sandbox) mark(phase string) {
	s.stampMu.Lock()
	s.stamps = append(s.stamps, nsinit.Stamp{Phase: phase, MonoNS: monoNow()})
	s.stampMu.Unlock()
}

// monoNow reads CLOCK_MONOTONIC, which the init reads too.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// closeControl closes the control pipe; the init takes EOF as "kill everything".
func (s *Sandbox) closeControl() {
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	if s.ctl != nil {
		s.ctl.Close()
		s.ctl = nil
	}
}
