// Package runner runs one command under agentbox's execution contract: an exact
// environment, resource limits, streamed output captured with bounded memory, a wall
// timeout, cancellation, a kill that takes the whole process tree, and a Result that says
// precisely how the command ended. Other packages (the environment service, the agent's
// tools, the grader) run code only through it.
//
// It intentionally does not invoke a shell: Argv is executed directly. Isolation from
// the host is not its job at the process level; the namespace level delegates to
// package sandbox.
package runner

import (
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// Isolation names how strongly a command is separated from the host.
type Isolation string

const (
	// IsolationProcess runs the command as a child process in its own session with
	// rlimits. It contains accidents, not attackers.
	IsolationProcess Isolation = "process"
	// IsolationNamespace runs the command in fresh namespaces with a read-only root,
	// a copy-on-write workspace, no network, seccomp, Landlock and a cgroup.
	IsolationNamespace Isolation = "namespace"
	// IsolationGvisor runs the command in a gVisor sandbox (runsc): the same
	// filesystem view, limits and no network as the namespace level, with the
	// command's system calls served by gVisor's user-space kernel instead of the
	// host's.
	IsolationGvisor Isolation = "gvisor"
)

// Limit names what ended a run, in Result.Limit.
type Limit string

const (
	LimitNone     Limit = ""
	LimitTimeout  Limit = "timeout"
	LimitCPU      Limit = "cpu"
	LimitMemory   Limit = "memory"
	LimitPids     Limit = "pids"
	LimitOutput   Limit = "output"
	LimitFileSize Limit = "file_size"
	LimitRootSize Limit = "root_size" // a failed command that filled its image root (SandboxOptions.RootSize)
)

// Defaults applied by Spec.withDefaults when a field is zero.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultKillGrace   = 2 * time.Second
	DefaultOutputLimit = 1 << 20  // captured per stream
	DefaultOutputTotal = 64 << 20 // hard total over both streams
	DefaultOpenFiles   = 1024
	DefaultFileSize    = 1 << 30
)

// Unlimited, as Limits.Memory or Limits.Pids, asks for no limit of that kind (the
// CLI's --memory 0 and --pids 0).
const Unlimited = sandbox.Unlimited

// Limits bounds one run. A zero field takes the default above, or where none is
// listed: CPUTime the wall timeout on every CPU of the host (a bound the kernel holds
// even if agentbox's timer never fires), Memory and Pids the sandbox's defaults at
// the namespace and gvisor levels (sandbox.DefaultMemory, sandbox.DefaultPids; at
// the gvisor level Memory bounds the whole gVisor sandbox and Pids is the command's
// RLIMIT_NPROC inside it) and no limit at the process level, CPUs no quota.
type Limits struct {
	Timeout     time.Duration // wall clock
	CPUTime     time.Duration // CPU seconds per process (RLIMIT_CPU); cgroup-wide where present
	Memory      int64         // bytes: cgroup memory (namespace) or RLIMIT_AS (process); or Unlimited
	Pids        int64         // processes: cgroup pids (namespace) or RLIMIT_NPROC (process); or Unlimited
	CPUs        float64       // CPU quota in cores (namespace only)
	FileSize    int64         // largest file a process may write (RLIMIT_FSIZE)
	OpenFiles   int64         // RLIMIT_NOFILE
	OutputLimit int64         // bytes of each stream kept in the Result (head and tail)
	OutputTotal int64         // bytes over both streams after which the run is killed
	KillGrace   time.Duration // between SIGTERM and SIGKILL
}

// Spec describes one command to run.
type Spec struct {
	Argv []string
	// Env holds KEY=VALUE entries layered over the minimal default (PATH, HOME, LANG,
	// TMPDIR); nothing is inherited from agentbox's own environment.
	Env []string
	// Workspace is the host directory the command works in (the current directory if
	// empty). At the namespace level it appears as /workspace, copy-on-write.
	Workspace string
	// Cwd is a directory relative to the workspace to start in.
	Cwd string
	// Stdin feeds the command; nil means /dev/null. An *os.File is passed directly,
	// unless it is a terminal: the command never gets a terminal, it reads a pipe
	// that agentbox copies the terminal's input into. Stdout and stderr are always
	// pipes that agentbox reads.
	Stdin io.Reader
	// Stdout and Stderr, when set, receive the streams live as they are produced.
	Stdout, Stderr io.Writer
	// TTY, when set, runs the command on a terminal of its sandbox's own (a pty
	// of the sandbox's devpts instance, opened inside it; see StartIn, the only
	// way to run one): the terminal is the command's stdin, stdout, stderr and
	// controlling terminal. Stdin is typed into it, and what the command writes
	// to it is the one output stream, Stdout (Stderr stays empty), under the same
	// limits. The command never gets a descriptor of the caller's terminal.
	TTY *TTY
	// StdoutFile and StderrFile, when set, receive the full streams on disk, up to
	// Limits.OutputTotal. They are created afresh and never followed if a link.
	StdoutFile, StderrFile string
	Limits                 Limits
	Isolation              Isolation
	Sandbox                SandboxOptions
}

// TTY is the size of a command's terminal in characters; Command.Resize changes it.
type TTY struct{ Rows, Cols uint16 }

// SandboxOptions apply at the namespace level; the gvisor level takes TmpSize and
// DiffOut.
type SandboxOptions struct {
	// WriteWorkspace binds the workspace read-write instead of copy-on-write.
	WriteWorkspace bool
	// RootFS replaces the host's system directories with this tree.
	RootFS string
	// Image, when set, is the sandbox's root file system (sandbox.Config.Image):
	// opened by the caller and kept open until Run returns. Its config's Env
	// comes between the defaults and Env, its working directory is the default
	// when Cwd is empty.
	Image *image.Image
	// TmpSize bounds the sandbox's /tmp (default 256 MiB).
	TmpSize int64
	// WorkspaceSize bounds what the command can write to the copy-on-write
	// workspace (default 1 GiB; not with WriteWorkspace, whose writes go to the host).
	WorkspaceSize int64
	// RootSize bounds what the command can write to its image root (Image's
	// private upper layer; default sandbox.DefaultRootSize, 1 GiB). A command
	// that fails having filled it is ended by LimitRootSize.
	RootSize int64
	// DiffOut, when set, receives the workspace changes as a unified diff.
	DiffOut string
	// Network, when set, gives the command one way out: an egress proxy on the host
	// with this policy (package egress), which the sandbox reaches on its loopback
	// (sandbox.Network). Each secret's placeholder is added to the environment
	// under the secret's name; Result.Network records every connection. Nil: no
	// network but the sandbox's own loopback.
	Network *egress.Policy
	// Mounts are host directories shown at other paths (see sandbox.Mount).
	Mounts []sandbox.Mount
}

// DefaultPath is the PATH a command gets unless Env sets one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// DefaultEnv returns the minimal environment: PATH, HOME, LANG and TMPDIR, followed by
// extra ("K=V" entries), which override the defaults with the same key.
func DefaultEnv(home, tmp string, extra ...string) []string {
	env := []string{"PATH=" + DefaultPath, "HOME=" + home, "LANG=C.UTF-8", "TMPDIR=" + tmp}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		out := env[:0]
		for _, e := range env {
			if ek, _, _ := strings.Cut(e, "="); ek != k {
				out = append(out, e)
			}
		}
		env = append(out, kv)
	}
	return env
}

// ErrInvalidSpec wraps every validation failure of a Spec.
var ErrInvalidSpec = errors.New("invalid run spec")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
}

// Validate reports the first problem with s, naming the field and what to do.
func (s *Spec) Validate() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return invalid("no command: give the program to run after --")
	}
	for _, a := range s.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid("argument %q contains a NUL byte", a)
		}
	}
	for _, kv := range s.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, "\x00") || strings.IndexByte(kv, 0) >= 0 {
			return invalid("environment entry %q: use KEY=VALUE with a non-empty key and no NUL", kv)
		}
	}
	if s.Cwd != "" {
		if path.IsAbs(s.Cwd) {
			return invalid("cwd %q must be relative to the workspace", s.Cwd)
		}
		if c := path.Clean(s.Cwd); c == ".." || strings.HasPrefix(c, "../") {
			return invalid("cwd %q leaves the workspace", s.Cwd)
		}
	}
	if t := s.TTY; t != nil && (t.Rows == 0 || t.Cols == 0) {
		return invalid("terminal size %dx%d: give at least one row and one column", t.Cols, t.Rows)
	}
	l := s.Limits
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", l.Timeout}, {"cpu-time", l.CPUTime}, {"kill-grace", l.KillGrace}} {
		if d.v < 0 {
			return invalid("--%s %v is negative", d.name, d.v)
		}
	}
	if l.CPUTime > 0 && l.CPUTime < time.Second {
		return invalid("--cpu-time %v is below the kernel's 1s granularity", l.CPUTime)
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"memory", l.Memory}, {"pids", l.Pids}, {"file-size", l.FileSize}, {"open-files", l.OpenFiles}, {"output-limit", l.OutputLimit}, {"output-total", l.OutputTotal}} {
		if n.v < 0 && !(n.v == Unlimited && (n.name == "memory" || n.name == "pids")) {
			return invalid("--%s %d is negative", n.name, n.v)
		}
	}
	if s.Sandbox.WorkspaceSize < 0 {
		return invalid("--workspace-size %d is negative", s.Sandbox.WorkspaceSize)
	}
	if s.Sandbox.RootSize < 0 {
		return invalid("--root-size %d is negative", s.Sandbox.RootSize)
	}
	if s.Sandbox.WorkspaceSize != 0 && s.Sandbox.WriteWorkspace {
		return invalid("--workspace-size bounds the copy-on-write workspace; with --write the writes go to the host directory")
	}
	if l.Memory > 0 && l.Memory < 1<<20 {
		return invalid("--memory %d is below 1M; nothing useful runs in less", l.Memory)
	}
	if l.OpenFiles > 0 && l.OpenFiles < 4 {
		return invalid("--open-files %d leaves no room for stdin, stdout and stderr; use 4 or more", l.OpenFiles)
	}
	if l.CPUs < 0 {
		return invalid("--cpus %v is negative", l.CPUs)
	}
	if l.OutputTotal > 0 && l.OutputLimit > l.OutputTotal {
		return invalid("--output-limit %d exceeds --output-total %d", l.OutputLimit, l.OutputTotal)
	}
	switch s.Isolation {
	case "", IsolationProcess, IsolationNamespace, IsolationGvisor:
	default:
		return invalid("isolation %q: use process, namespace or gvisor", s.Isolation)
	}
	if s.Isolation == IsolationGvisor {
		if s.Sandbox.WriteWorkspace || s.Sandbox.RootFS != "" || s.Sandbox.WorkspaceSize != 0 || s.Sandbox.RootSize != 0 || len(s.Sandbox.Mounts) > 0 {
			return invalid("--write, --rootfs, --workspace-size, --root-size and --mount need --isolation namespace")
		}
		if s.Sandbox.Network != nil {
			return invalid("--allow-host needs --isolation namespace: the gvisor level has no network but its loopback")
		}
	}
	if s.Isolation == IsolationProcess {
		if s.Sandbox.WriteWorkspace || s.Sandbox.RootFS != "" || s.Sandbox.Image != nil || s.Sandbox.DiffOut != "" || s.Sandbox.WorkspaceSize != 0 || l.CPUs != 0 || len(s.Sandbox.Mounts) > 0 {
			return invalid("--write, --rootfs, --image, --template, --diff-out, --workspace-size, --mount and --cpus need --isolation namespace")
		}
		if s.Sandbox.Network != nil {
			// A process shares the host's network: a proxy would be advice.
			return invalid("--allow-host needs --isolation namespace: only a sandbox's network namespace makes the proxy its one way out")
		}
	}
	for _, m := range s.Sandbox.Mounts {
		if err := sandbox.CheckMount(m); err != nil {
			return invalid("%v", err)
		}
	}
	if n := s.Sandbox.Network; n != nil {
		if err := n.Validate(); err != nil {
			return invalid("network: %v", err)
		}
		for _, sec := range n.Secrets {
			for _, kv := range s.Env {
				if k, _, _ := strings.Cut(kv, "="); k == sec.Name {
					return invalid("--env %s and --secret %s: the secret's placeholder is the variable's value; drop one", k, sec.Name)
				}
			}
		}
	}
	return nil
}

// cpuSeconds is the run's RLIMIT_CPU soft limit in seconds (see Limits.CPUTime);
// the hard limit, SIGKILL, is one second more. Call it after withDefaults.
func (l Limits) cpuSeconds() uint64 {
	d := l.CPUTime
	if d == 0 {
		d = l.Timeout * time.Duration(runtime.NumCPU())
	}
	return uint64((d + time.Second - 1) / time.Second)
}

// withDefaults returns a copy of s with zero limits replaced by the defaults.
func (s Spec) withDefaults() Spec {
	l := &s.Limits
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.KillGrace == 0 {
		l.KillGrace = DefaultKillGrace
	}
	if l.OutputTotal == 0 {
		l.OutputTotal = DefaultOutputTotal
	}
	if l.OutputLimit == 0 {
		l.OutputLimit = min(DefaultOutputLimit, l.OutputTotal)
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	if l.FileSize == 0 {
		l.FileSize = DefaultFileSize
	}
	if s.Isolation == "" {
		s.Isolation = IsolationNamespace
	}
	return s
}
