package runner

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/workspace"
)

// The namespace level: package sandbox starts the command in fresh namespaces behind a
// read-only root, seccomp, Landlock and a cgroup. The sandbox's init reaps and kills
// inside; the cgroup confirms from outside that nothing survived.

// SandboxHome is HOME and TMPDIR inside the sandbox: the private tmpfs, so tools that
// write dotfiles and caches do not touch the workspace.
const SandboxHome = "/tmp"

// nsChild is a fresh sandbox running the command or, with proc set, one command
// of an existing persistent sandbox (RunIn): the same child with the same result
// mapping, whose cleanup then kills only that command's processes.
type nsChild struct {
	sb    *sandbox.Sandbox
	spec  Spec
	lower string
	proxy *egress.Proxy // Spec.Sandbox.Network's; closed after the sandbox

	proc    *sandbox.Process
	before  sandbox.Hits // the environment's cgroup counters when proc started
	killed9 bool         // proc's main process died of SIGKILL
}

func startNamespace(s Spec, io stdio, _ *Result) (_ child, err error) {
	env := s.Env
	var proxy *egress.Proxy
	if n := s.Sandbox.Network; n != nil {
		// The CA lives no longer than the run may.
		proxy, err = egress.NewProxy(egress.Config{Policy: *n, CALifetime: s.Limits.Timeout + time.Hour, LogSize: maxNetworkEvents})
		if err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		defer func() {
			if err != nil {
				proxy.Close()
			}
		}()
		env = append(slices.Clip(env), placeholders(n)...)
	}
	dir := path.Join(sandbox.DefaultDir, s.Cwd)
	if im := s.Sandbox.Image; im != nil {
		env = append(slices.Clip(im.Config.Env), env...)
		if s.Cwd == "" && im.Config.WorkingDir != "" {
			dir = im.Config.WorkingDir
		}
	}
	cfg := sandbox.Config{
		Argv:           s.Argv,
		Env:            DefaultEnv(SandboxHome, SandboxHome, env...),
		Dir:            dir,
		WorkspaceWrite: s.Sandbox.WriteWorkspace,
		WorkspaceSize:  s.Sandbox.WorkspaceSize,
		RootSize:       s.Sandbox.RootSize,
		RootFS:         s.Sandbox.RootFS,
		Image:          s.Sandbox.Image,
		Mounts:         s.Sandbox.Mounts,
		TmpSize:        s.Sandbox.TmpSize,
		Memory:         s.Limits.Memory,
		Pids:           s.Limits.Pids,
		CPUs:           s.Limits.CPUs,
		Rlimits:        rlimits(s.Limits),
	}
	if proxy != nil {
		cfg.Network = &sandbox.Network{Proxy: proxy}
	}
	if s.Workspace != "" {
		ws, err := filepath.Abs(s.Workspace)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		cfg.Workspace = ws
	} else if s.Sandbox.WriteWorkspace || s.Sandbox.DiffOut != "" {
		return nil, errors.New("--write and --diff-out need --workspace")
	}
	sb, err := sandbox.Start(cfg, sandbox.Stdio{Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr})
	if err != nil {
		if errors.Is(err, sandbox.ErrUnsupported) {
			return nil, fmt.Errorf("%w (namespace isolation fails closed; `agentbox doctor` shows what this host supports, and --isolation process runs with less)", err)
		}
		return nil, err
	}
	return &nsChild{sb: sb, spec: s, lower: cfg.Workspace, proxy: proxy}, nil
}

// maxNetworkEvents bounds the connections a run's Result lists (the oldest go).
const maxNetworkEvents = 10000

// placeholders are the environment entries that carry the policy's secrets:
// NAME=placeholder. The values stay on the host, with the proxy.
func placeholders(p *egress.Policy) []string {
	var out []string
	for _, s := range p.Secrets {
		out = append(out, s.Name+"="+s.Placeholder)
	}
	return out
}

// startInNamespace returns the starter of RunIn: the command runs in sb.
func startInNamespace(sb *sandbox.Sandbox) starter {
	return func(s Spec, io stdio, res *Result) (child, error) {
		res.LandlockABI = landlockABI(sb.Landlock())
		cfg := sandbox.ExecConfig{
			Argv:    s.Argv,
			Env:     DefaultEnv(SandboxHome, SandboxHome, s.Env...),
			Dir:     path.Join(sandbox.DefaultDir, s.Cwd),
			Rlimits: rlimits(s.Limits),
		}
		stdio := sandbox.Stdio{Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr}
		if s.TTY != nil {
			cfg.TTY = &sandbox.Winsize{Rows: s.TTY.Rows, Cols: s.TTY.Cols}
			stdio = sandbox.Stdio{}
		}
		before, err := sb.Hits()
		if err != nil {
			return nil, err
		}
		p, err := sb.Exec(cfg, stdio)
		if err != nil {
			if se := execStartError(s.Argv[0], err); se != nil {
				return nil, se
			}
			return nil, err
		}
		c := &nsChild{sb: sb, spec: s, proc: p, before: before}
		if s.TTY != nil {
			return &ttyChild{nsChild: c, term: p.Terminal()}, nil
		}
		return c, nil
	}
}

// ttyChild is a command of a persistent sandbox on a terminal of the sandbox's
// own: the host holds only the pty's master, which the init opened inside.
type ttyChild struct {
	*nsChild
	mu     sync.Mutex
	term   *os.File
	closed bool
}

func (c *ttyChild) terminal() *os.File { return c.term }

func (c *ttyChild) resize(t TTY) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil // over: nothing left to resize
	}
	return sandbox.SetSize(c.term, sandbox.Winsize{Rows: t.Rows, Cols: t.Cols})
}

func (c *ttyChild) closeTerminal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.term.Close()
	}
}

// rlimits are a command's per-process limits.
func rlimits(l Limits) sandbox.Rlimits {
	sec := l.cpuSeconds()
	return sandbox.Rlimits{
		CPU:    sandbox.Rlimit{Soft: sec, Hard: sec + 1},
		FSize:  sandbox.Rlimit{Soft: uint64(l.FileSize)},
		NoFile: sandbox.Rlimit{Soft: uint64(l.OpenFiles)},
	}
}

// execStartError maps a sandbox's failure to execute the command to the exit
// codes a shell would use (127 not found, 126 not executable), or returns nil.
func execStartError(argv0 string, err error) *startError {
	var se *sandbox.SetupError
	switch {
	case !errors.As(err, &se) || se.Stage != sandbox.StageExec:
		return nil
	case se.Errno == syscall.ENOENT:
		return &startError{StatusNotFound, fmt.Errorf("%s: not found in the sandbox", argv0)}
	default:
		return &startError{StatusNotExecutable, fmt.Errorf("%s: cannot execute in the sandbox: %s", argv0, se.Detail)}
	}
}

func (c *nsChild) wait() exitInfo {
	if c.proc != nil {
		ex, err := c.proc.Wait()
		c.killed9 = ex.Signal == syscall.SIGKILL
		ei := exitInfo{
			code:     ex.ExitCode,
			sig:      ex.Signal,
			usage:    usage{user: ex.Rusage.User, sys: ex.Rusage.Sys, maxRSS: ex.Rusage.MaxRSS},
			landlock: landlockABI(ex.Landlock),
		}
		if err != nil {
			ei.waitErr = err
		}
		return ei
	}
	ex, err := c.sb.Wait()
	ei := exitInfo{
		code:     ex.ExitCode,
		sig:      ex.Signal,
		usage:    usage{user: ex.Rusage.User, sys: ex.Rusage.Sys, maxRSS: ex.Rusage.MaxRSS},
		landlock: landlockABI(ex.Landlock),
	}
	switch se := execStartError(c.spec.Argv[0], ex.SetupErr); {
	case se != nil:
		ei.startErr = se
	case ex.SetupErr != nil:
		ei.waitErr = ex.SetupErr
	case err != nil && !errors.Is(err, sandbox.ErrNoReport):
		ei.waitErr = err
	}
	return ei
}

func (c *nsChild) signal(sig syscall.Signal) {
	if c.proc != nil {
		c.proc.Signal(sig)
		return
	}
	if sig == syscall.SIGKILL {
		c.sb.Kill()
		return
	}
	c.sb.Terminate()
}

// cleanup reads the cgroup's figures, kills the sandbox, writes the workspace diff
// from the private upper layer and removes the sandbox. Kill returns once the cgroup
// is empty, so nothing writes the upper layer while the diff is taken; Destroy then
// unmounts and removes it.
func (c *nsChild) cleanup(time.Duration) cleanupInfo {
	if c.proc != nil {
		return c.cleanupIn()
	}
	var info cleanupInfo
	if st, err := c.sb.Stats(); err == nil {
		info.cgroup = &usage{user: st.CPUUser, sys: st.CPUSys, maxRSS: st.MemoryPeak}
		info.oom = st.OOMKills > 0
		info.pidsHit = st.PidsLimitHits > 0
	}
	var errs []error
	killErr := c.sb.Kill()
	info.rootFull = c.sb.RootFull() // before Destroy unmounts it
	if out := c.spec.Sandbox.DiffOut; out != "" {
		if killErr != nil {
			errs = append(errs, fmt.Errorf("--diff-out not written: %w", killErr))
		} else if err := writeDiff(out, c.lower, c.sb.UpperDir(), c.spec.Sandbox.WriteWorkspace); err != nil {
			errs = append(errs, err)
		}
	}
	survivors, err := c.sb.Destroy()
	info.survivors = survivors
	if err != nil {
		errs = append(errs, err)
	}
	if c.proxy != nil {
		// The sandbox's sockets are gone: every connection has ended or is cut
		// now, and logged once Close returns.
		c.proxy.Close()
		info.network = c.proxy.Log()
	}
	info.err = errors.Join(errs...)
	return info
}

func writeDiff(out, lower, upper string, write bool) error {
	if write || upper == "" {
		// A read-write bind leaves no layer to diff: the changes are in the host dir.
		return errors.New("--diff-out needs the copy-on-write workspace (not --write)")
	}
	diff, _, err := workspace.Diff(lower, upper, workspace.DiffOptions{})
	if err != nil {
		return err
	}
	f, err := createOutputFile(out)
	if err != nil {
		return err
	}
	_, werr := f.Write(diff)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// landlockABI reads "abi=N" from the sandbox's Landlock report.
func landlockABI(report string) int {
	for _, f := range strings.Fields(report) {
		if v, ok := strings.CutPrefix(f, "abi="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// cleanupIn kills what is left of a command in an existing sandbox and reads the
// environment's cgroup counters for what hit its limits meanwhile (see RunIn).
func (c *nsChild) cleanupIn() cleanupInfo {
	cl, err := c.proc.Kill()
	info := cleanupInfo{survivors: cl.Survivors, err: err,
		usage: usage{user: cl.Rusage.User, sys: cl.Rusage.Sys, maxRSS: cl.Rusage.MaxRSS}}
	if st, err := c.sb.Hits(); err == nil {
		info.oom = st.OOMKills > c.before.OOMKills && c.killed9
		info.pidsHit = st.PidsLimitHits > c.before.PidsLimitHits
	}
	return info
}
