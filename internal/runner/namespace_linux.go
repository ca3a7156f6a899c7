package runner

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/workspace"
)

// The namespace level: package sandbox starts the command in fresh namespaces behind a
// read-only root, seccomp, Landlock and a cgroup. The sandbox's init reaps and kills
// inside; the cgroup confirms from outside that nothing survived.

// SandboxHome is HOME and TMPDIR inside the sandbox: the private tmpfs, so tools that
// write dotfiles and caches do not touch the workspace.
const SandboxHome = "/tmp"

type nsChild struct {
	sb      *sandbox.Sandbox
	spec    Spec
	lower   string
	exitSig syscall.Signal
}

func startNamespace(s Spec, io stdio, _ *Result) (child, error) {
	cfg := sandbox.Config{
		Argv:           s.Argv,
		Env:            DefaultEnv(SandboxHome, SandboxHome, s.Env...),
		Dir:            path.Join(sandbox.DefaultDir, s.Cwd),
		WorkspaceWrite: s.Sandbox.WriteWorkspace,
		WorkspaceSize:  s.Sandbox.WorkspaceSize,
		RootFS:         s.Sandbox.RootFS,
		TmpSize:        s.Sandbox.TmpSize,
		Memory:         s.Limits.Memory,
		Pids:           s.Limits.Pids,
		CPUs:           s.Limits.CPUs,
		Rlimits: sandbox.Rlimits{
			FSize:  sandbox.Rlimit{Soft: uint64(s.Limits.FileSize)},
			NoFile: sandbox.Rlimit{Soft: uint64(s.Limits.OpenFiles)},
		},
	}
	if s.Limits.CPUTime > 0 {
		sec := uint64((s.Limits.CPUTime + time.Second - 1) / time.Second)
		cfg.Rlimits.CPU = sandbox.Rlimit{Soft: sec, Hard: sec + 1}
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
	return &nsChild{sb: sb, spec: s, lower: cfg.Workspace}, nil
}

func (c *nsChild) wait() exitInfo {
	ex, err := c.sb.Wait()
	ei := exitInfo{
		code:     ex.ExitCode,
		sig:      ex.Signal,
		usage:    usage{user: ex.Rusage.User, sys: ex.Rusage.Sys, maxRSS: ex.Rusage.MaxRSS},
		landlock: landlockABI(ex.Landlock),
	}
	var se *sandbox.SetupError
	switch {
	case errors.As(ex.SetupErr, &se) && se.Stage == sandbox.StageExec && se.Errno == syscall.ENOENT:
		ei.startErr = &startError{StatusNotFound, fmt.Errorf("%s: not found in the sandbox", c.spec.Argv[0])}
	case errors.As(ex.SetupErr, &se) && se.Stage == sandbox.StageExec:
		ei.startErr = &startError{StatusNotExecutable, fmt.Errorf("%s: cannot execute in the sandbox: %s", c.spec.Argv[0], se.Detail)}
	case ex.SetupErr != nil:
		ei.waitErr = ex.SetupErr
	case err != nil && !errors.Is(err, sandbox.ErrNoReport):
		ei.waitErr = err
	}
	return ei
}

func (c *nsChild) signal(sig syscall.Signal) {
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
	var info cleanupInfo
	if st, err := c.sb.Stats(); err == nil {
		info.cgroup = &usage{user: st.CPUUser, sys: st.CPUSys, maxRSS: st.MemoryPeak}
		info.oom = st.OOMKills > 0
		info.pidsHit = st.PidsLimitHits > 0
	}
	var errs []error
	killErr := c.sb.Kill()
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
