package runner

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/gvisor"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"golang.org/x/sys/unix"
)

// The gvisor level: package gvisor runs the command in a gVisor sandbox (runsc),
// behind the same contract as the namespace level. The sandbox's cgroup holds
// every host process of it, so its figures are the run's and its kill is total.

type gvChild struct {
	sb   *gvisor.Sandbox
	spec Spec
	ws   string // the host workspace: the overlay's lower layer
}

func startGvisor(s Spec, io stdio) (child, error) {
	memory := s.Limits.Memory
	if memory == 0 {
		memory = sandbox.DefaultMemory()
	}
	pids := s.Limits.Pids
	if pids == 0 {
		pids = sandbox.DefaultPids
	}
	sec := s.Limits.cpuSeconds()
	cfg := gvisor.Config{
		Argv:     s.Argv,
		Env:      DefaultEnv(SandboxHome, SandboxHome, s.Env...),
		Dir:      path.Join(gvisor.Workspace, s.Cwd),
		TmpSize:  s.Sandbox.TmpSize,
		ShmSize:  sandbox.DefaultShmSize,
		Memory:   max(memory, 0),
		Pids:     max(pids, 0),
		CPUs:     s.Limits.CPUs,
		CPU:      gvisor.Rlimit{Soft: sec, Hard: sec + 1},
		FileSize: uint64(s.Limits.FileSize),
		NoFile:   uint64(s.Limits.OpenFiles),
	}
	if cfg.TmpSize == 0 {
		cfg.TmpSize = sandbox.DefaultTmpSize
	}
	// The command is the workspace's owner (the sandbox user, uid 1000, without
	// one), with no capabilities.
	cfg.UID, cfg.GID = nsinit.UID, nsinit.GID
	if s.Workspace != "" {
		ws, err := filepath.Abs(s.Workspace)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		var st unix.Stat_t
		if err := unix.Stat(ws, &st); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, fmt.Errorf("workspace %s is not a directory", ws)
		}
		cfg.Workspace, cfg.UID, cfg.GID = ws, st.Uid, st.Gid
	} else if s.Sandbox.DiffOut != "" {
		return nil, errors.New("--diff-out needs --workspace")
	}
	sb, err := gvisor.Start(cfg, gvisor.Stdio{Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr})
	if err != nil {
		if errors.Is(err, gvisor.ErrUnsupported) {
			return nil, fmt.Errorf("%w (gvisor isolation fails closed; --isolation namespace runs without it)", err)
		}
		return nil, err
	}
	return &gvChild{sb: sb, spec: s, ws: cfg.Workspace}, nil
}

func (c *gvChild) wait() exitInfo {
	ex := c.sb.Wait()
	ei := exitInfo{code: ex.ExitCode, sig: ex.Signal}
	switch {
	case errors.Is(ex.Err, gvisor.ErrNotFound):
		ei.startErr = &startError{StatusNotFound, fmt.Errorf("%s: not found in the sandbox", c.spec.Argv[0])}
	case errors.Is(ex.Err, gvisor.ErrNotExecutable):
		ei.startErr = &startError{StatusNotExecutable, fmt.Errorf("%s: cannot execute in the sandbox", c.spec.Argv[0])}
	case ex.Err != nil:
		ei.waitErr = ex.Err
	}
	return ei
}

func (c *gvChild) signal(sig syscall.Signal) { c.sb.Signal(sig) }

// cleanup reads the cgroup, kills the sandbox (runsc has already ended it when
// the command's init exited: a pid namespace dies with its init), writes the diff
// from the overlay's upper layer and removes the sandbox.
func (c *gvChild) cleanup(time.Duration) cleanupInfo {
	var info cleanupInfo
	var errs []error
	killErr := c.sb.Kill()
	if st, err := c.sb.Stats(); err == nil {
		info.cgroup = &usage{user: st.CPUUser, sys: st.CPUSystem, maxRSS: st.MemoryPeak}
		info.oom = st.OOMKills > 0
		info.pidsHit = st.PidsLimitHits > 0
	}
	if out := c.spec.Sandbox.DiffOut; out != "" {
		if killErr != nil {
			errs = append(errs, fmt.Errorf("--diff-out not written: %w", killErr))
		} else if err := writeDiff(out, c.ws, c.sb.UpperDir(), false); err != nil {
			errs = append(errs, err)
		}
	}
	survivors, err := c.sb.Destroy()
	info.survivors = survivors
	if err != nil {
		errs = append(errs, err)
	}
	info.err = errors.Join(errs...)
	return info
}

// gvInChild is one command of a gVisor environment (RunIn).
type gvInChild struct {
	env     *gvisor.Env
	p       *gvisor.Process
	argv0   string
	before  gvisor.Stats // the environment's cgroup counters when it started
	killed9 bool
}

// startInGvisor returns the starter of RunIn at the gvisor level.
func startInGvisor(env *gvisor.Env) starter {
	return func(s Spec, io stdio, _ *Result) (child, error) {
		sec := s.Limits.cpuSeconds()
		before, err := env.Stats()
		if err != nil {
			return nil, err
		}
		p, err := env.Exec(gvisor.ExecConfig{
			Argv:     s.Argv,
			Env:      DefaultEnv(SandboxHome, SandboxHome, s.Env...),
			Dir:      path.Join(gvisor.Workspace, s.Cwd),
			CPU:      gvisor.Rlimit{Soft: sec, Hard: sec + 1},
			FileSize: uint64(s.Limits.FileSize),
			NoFile:   uint64(s.Limits.OpenFiles),
		}, gvisor.Stdio{Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr})
		if err != nil {
			return nil, err
		}
		return &gvInChild{env: env, p: p, argv0: s.Argv[0], before: before}, nil
	}
}

func (c *gvInChild) wait() exitInfo {
	ex := c.p.Wait()
	c.killed9 = ex.Signal == syscall.SIGKILL
	ei := exitInfo{code: ex.ExitCode, sig: ex.Signal, usage: usage{user: ex.User, sys: ex.Sys, maxRSS: ex.MaxRSS}}
	switch {
	case errors.Is(ex.Err, gvisor.ErrNotFound):
		ei.startErr = &startError{StatusNotFound, fmt.Errorf("%s: not found in the sandbox", c.argv0)}
	case errors.Is(ex.Err, gvisor.ErrNotExecutable):
		ei.startErr = &startError{StatusNotExecutable, fmt.Errorf("%s: cannot execute in the sandbox", c.argv0)}
	case ex.Err != nil:
		ei.waitErr = ex.Err
	}
	return ei
}

func (c *gvInChild) signal(sig syscall.Signal) { c.p.Signal(sig) }

// cleanup ends the command's PID namespace (it is gone already when its main
// process has exited) and reads the environment's cgroup for what hit its
// limits meanwhile.
func (c *gvInChild) cleanup(time.Duration) cleanupInfo {
	survivors, err := c.p.Kill()
	info := cleanupInfo{survivors: survivors, err: err}
	if st, err := c.env.Stats(); err == nil {
		info.oom = st.OOMKills > c.before.OOMKills && c.killed9
		info.pidsHit = st.PidsLimitHits > c.before.PidsLimitHits
	}
	return info
}
