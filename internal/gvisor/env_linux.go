package gvisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/gvisor/gvinit"
	"golang.org/x/sys/unix"
)

// Env is a persistent gVisor sandbox: runsc runs gvinit's init, which does
// nothing but reap, and each command is a runsc exec of a gvinit helper that
// gives the command a PID namespace of its own (see package gvinit). Its
// methods are safe for concurrent use.
type Env struct {
	sb    *Sandbox
	execs atomic.Uint64
	// killed is set once Destroy began: commands that end then died of it.
	killed atomic.Bool
}

// StartEnv starts a persistent sandbox for cfg (Argv, Env and Dir are ignored:
// each Exec gives its own) and returns once commands can run in it. The caller
// must Destroy it.
func StartEnv(cfg Config) (_ *Env, err error) {
	ready, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ready.Close()
	sb, err := start(cfg, Stdio{Stdout: w}, true)
	w.Close()
	if err != nil {
		return nil, err
	}
	e := &Env{sb: sb}
	line := make(chan error, 1)
	go func() {
		s, err := bufio.NewReader(ready).ReadString('\n')
		if err == nil && s != "ready\n" {
			err = fmt.Errorf("unexpected %q", s)
		}
		line <- err
	}()
	select {
	case err = <-line:
	case <-sb.exited:
	}
	if err != nil || isDone(sb.exited) {
		select { // runsc's account, if it is over
		case <-sb.exited:
			if sb.exit.Err != nil {
				err = sb.exit.Err
			} else {
				err = fmt.Errorf("the init exited: %+v", sb.exit)
			}
		case <-time.After(5 * time.Second):
		}
	}
	if err != nil {
		e.Destroy()
		return nil, fmt.Errorf("gvisor environment: start: %w", err)
	}
	return e, nil
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// envSpec makes the bundle's process gvinit's init and shows the agentbox
// binary at gvinit.Path.
func (sb *Sandbox) envSpec(sp *ociSpec) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: the agentbox binary: %w", ErrUnsupported, err)
	}
	if err := os.WriteFile(filepath.Join(sb.state, "rootfs", gvinit.Path), nil, 0o755); err != nil {
		return err
	}
	sp.Mounts = append(sp.Mounts, ociMount{Destination: gvinit.Path, Type: "bind", Source: exe,
		Options: []string{"bind", "ro", "nosuid", "nodev"}})
	none := []string{}
	sp.Process.User = ociUser{}
	sp.Process.Args = []string{gvinit.Path, gvinit.ModeInit}
	sp.Process.Env = []string{"PATH=/usr/bin:/bin"}
	sp.Process.Cwd = "/"
	sp.Process.Capabilities = ociCaps{Bounding: none, Effective: none, Permitted: none, Inheritable: none, Ambient: none}
	// Each command's helper sets its rlimits (see Exec).
	sp.Process.Rlimits = []ociLimit{{"RLIMIT_CORE", 0, 0}}
	return nil
}

// helperCaps are what a command's helpers need inside gVisor: a PID namespace
// (SYS_ADMIN), the command's uid and gid, signalling it, and dropping its
// bounding set. The command itself has none.
var helperCaps = []string{"CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SETPCAP"}

// ExecConfig is one command of an Env.
type ExecConfig struct {
	Argv []string
	Env  []string
	Dir  string // inside the sandbox; the workspace when empty
	// CPU, FileSize and NoFile as in Config; the environment's Pids bounds
	// the processes of all its commands together.
	CPU      Rlimit
	FileSize uint64
	NoFile   uint64
}

// Process is a command running in an Env.
type Process struct {
	e      *Env
	cmd    *exec.Cmd
	ctl    *os.File // the helper's control pipe (write end)
	log    string
	ctlMu  sync.Mutex
	done   chan struct{} // closed when runsc exec has returned
	report *gvinit.Report
	killed atomic.Bool
	sent   atomic.Int32 // the last signal the host sent, or 0
}

// ProcessExit is how a command ended.
type ProcessExit struct {
	ExitCode int
	Signal   syscall.Signal
	// User, Sys and MaxRSS are the usage of the command's processes (MaxRSS:
	// the largest one's resident set, in bytes).
	User, Sys time.Duration
	MaxRSS    int64
	// Err is ErrNotFound or ErrNotExecutable (the command could not start), or
	// says why no status is known.
	Err error
}

// Exec starts a command: runsc exec of its helper. A command that cannot be
// found or executed is a ProcessExit.Err of Wait.
func (e *Env) Exec(cfg ExecConfig, stdio Stdio) (_ *Process, err error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New("gvisor environment: empty command")
	}
	if e.killed.Load() {
		return nil, errors.New("gvisor environment: destroyed")
	}
	c := e.sb.cfg
	rl := []gvinit.Rlimit{{Resource: unix.RLIMIT_CORE}}
	for _, l := range []gvinit.Rlimit{
		{Resource: unix.RLIMIT_CPU, Soft: cfg.CPU.Soft, Hard: cfg.CPU.Hard},
		{Resource: unix.RLIMIT_FSIZE, Soft: cfg.FileSize, Hard: cfg.FileSize},
		{Resource: unix.RLIMIT_NOFILE, Soft: cfg.NoFile, Hard: cfg.NoFile},
		{Resource: unix.RLIMIT_NPROC, Soft: uint64(c.Pids), Hard: uint64(c.Pids)},
	} {
		if l.Soft > 0 { // zero: no limit
			rl = append(rl, l)
		}
	}
	arg, err := json.Marshal(gvinit.Config{UID: c.UID, GID: c.GID, Argv: cfg.Argv, Rlimits: rl})
	if err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		dir = Workspace
	}
	n := strconv.FormatUint(e.execs.Add(1), 10)
	proc := ociProcess{
		User: ociUser{}, Args: []string{gvinit.Path, gvinit.ModeExec, string(arg)}, Env: cfg.Env, Cwd: filepath.Clean(dir),
		Capabilities:    ociCaps{Bounding: helperCaps, Effective: helperCaps, Permitted: helperCaps, Inheritable: []string{}, Ambient: []string{}},
		Rlimits:         []ociLimit{},
		NoNewPrivileges: true,
	}
	data, err := json.Marshal(proc)
	if err != nil {
		return nil, err
	}
	procFile := filepath.Join(e.sb.state, "exec-"+n+".json")
	if err := os.WriteFile(procFile, data, 0o600); err != nil {
		return nil, err
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer reportW.Close()
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		reportR.Close()
		return nil, err
	}
	defer ctlR.Close()
	p := &Process{e: e, ctl: ctlW, log: "exec-" + n + ".log", done: make(chan struct{})}
	p.cmd = exec.Command(e.sb.runsc, e.sb.flags("exec", p.log, "exec", "--process", procFile,
		"--pass-fd", strconv.Itoa(gvinit.FDReport)+":"+strconv.Itoa(gvinit.FDReport),
		"--pass-fd", strconv.Itoa(gvinit.FDControl)+":"+strconv.Itoa(gvinit.FDControl), e.sb.id)...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	p.cmd.ExtraFiles = []*os.File{reportW, ctlR}
	p.cmd.Env = e.sb.cmd.Env
	p.cmd.Dir = e.sb.state
	// No parent-death signal (the forking thread may end first): runsc exec
	// ends with the sandbox, which dies with agentbox (see Start).
	if err := p.cmd.Start(); err != nil {
		os.Remove(procFile)
		reportR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("runsc exec: %w", err)
	}
	reports := make(chan *gvinit.Report, 1)
	go func() {
		defer reportR.Close()
		var r gvinit.Report
		line, err := bufio.NewReader(reportR).ReadBytes('\n')
		if err == nil && json.Unmarshal(line, &r) == nil {
			reports <- &r
			return
		}
		reports <- nil
	}()
	go func() {
		p.cmd.Wait()
		os.Remove(procFile)
		p.report = <-reports
		close(p.done)
	}()
	return p, nil
}

// Wait waits for the command's main process and returns how it ended. What it
// left behind died with it: its PID namespace ended with it.
func (p *Process) Wait() ProcessExit {
	<-p.done
	r := p.report
	ex := ProcessExit{ExitCode: -1}
	switch {
	case r == nil && (p.killed.Load() || p.e.killed.Load()):
		ex.Signal = syscall.SIGKILL
		return ex
	case r == nil && p.sent.Load() != 0:
		// The host's signal reached the helpers before they could report (a
		// command signalled as it starts): it ended of that signal.
		ex.Signal = syscall.Signal(p.sent.Load())
		return ex
	case r == nil:
		ex.Err = fmt.Errorf("runsc exec failed: %w", runscError(filepath.Join(p.e.sb.state, p.log), errors.New("no report")))
		return ex
	case r.StartErr == gvinit.StartNotFound:
		ex.Err = ErrNotFound
		return ex
	case r.StartErr == gvinit.StartNotExecutable:
		ex.Err = ErrNotExecutable
		return ex
	case r.StartErr != "":
		ex.Err = errors.New(r.StartErr)
		return ex
	}
	ws := syscall.WaitStatus(r.Status)
	if ws.Signaled() {
		ex.Signal = ws.Signal()
	} else {
		ex.ExitCode = ws.ExitStatus()
	}
	ex.User, ex.Sys, ex.MaxRSS = time.Duration(r.UserNS), time.Duration(r.SysNS), r.MaxRSSKB<<10
	return ex
}

// Signal sends sig to every process of the command.
func (p *Process) Signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		p.killed.Store(true)
	}
	p.sent.Store(int32(sig))
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl != nil {
		p.ctl.WriteString(strconv.Itoa(int(sig)) + "\n") // EPIPE: it is over
	}
}

// Kill ends every process of the command and returns once runsc exec has
// returned (or after 5 s, with the command counted as a survivor).
func (p *Process) Kill() (survivors int, err error) {
	select {
	case <-p.done:
	default:
		p.killed.Store(true)
		p.ctlMu.Lock()
		if p.ctl != nil {
			p.ctl.Close() // EOF: the helper kills the namespace
			p.ctl = nil
		}
		p.ctlMu.Unlock()
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		return 1, errors.New("gvisor environment: the command did not end")
	}
	p.ctlMu.Lock()
	if p.ctl != nil {
		p.ctl.Close()
		p.ctl = nil
	}
	p.ctlMu.Unlock()
	os.Remove(filepath.Join(p.e.sb.state, p.log))
	return 0, nil
}

// Wait blocks until the sandbox has ended (Destroy, or its init died).
func (e *Env) Wait() Exit { return e.sb.Wait() }

// Stats reads the sandbox's cgroup.
func (e *Env) Stats() (Stats, error) { return e.sb.Stats() }

// Frozen runs fn with the whole sandbox (the Sentry, which runs every command)
// frozen through its cgroup.
func (e *Env) Frozen(fn func() error) error { return e.sb.cg.Frozen(fn) }

// Pause freezes the whole sandbox until Resume.
func (e *Env) Pause() error { return e.sb.cg.Pause() }

// Resume thaws a paused sandbox.
func (e *Env) Resume() error { return e.sb.cg.Resume() }

// UpperDir is the workspace overlay's upper layer.
func (e *Env) UpperDir() string { return e.sb.UpperDir() }

// WorkspaceDir is an O_PATH descriptor of the workspace as the sandbox sees it
// (the overlay): host-side file operations go through it. It stays valid until
// Destroy and must not be closed by the caller.
func (e *Env) WorkspaceDir() *os.File { return e.sb.wsDir }

// UID is the commands' uid inside the sandbox, and the host owner of the files
// they create in the workspace.
func (e *Env) UID() int { return int(e.sb.cfg.UID) }

// Destroy kills everything and removes the sandbox (see Sandbox.Destroy).
func (e *Env) Destroy() (int, error) {
	e.killed.Store(true)
	return e.sb.Destroy()
}

// Pid is runsc's host pid: the sandbox's cgroup holds it.
func (e *Env) Pid() int { return e.sb.cmd.Process.Pid }

// StateDir is the sandbox's state directory on the host, removed by Destroy.
func (e *Env) StateDir() string { return e.sb.state }
