package runner

import (
	"context"
	"sync"
	"syscall"

	"github.com/agentbox/agentbox/internal/gvisor"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// RunIn runs spec as one command of sb, a persistent sandbox (an environment),
// under the same contract as Run: limits, captured output, timeout, cancellation
// and a Result. Its cleanup ends only this command's processes (see
// sandbox.Process.Kill); the sandbox and its other commands go on.
//
// What belongs to the sandbox cannot be set per command: Workspace, the Sandbox
// options, and the cgroup limits Memory, Pids and CPUs (ErrInvalidSpec). The
// Result's figures are the command's own where the kernel counts per process and
// the environment's where only the cgroup does:
//   - CPUUserMS, CPUSysMS: the command's processes (rusage of every process of
//     the command the sandbox's init reaped);
//   - MemoryPeakBytes: the largest resident set of one of its processes, not the
//     cgroup's peak, which covers the whole environment;
//   - OOMKilled and Limit "memory": the environment's cgroup counted an OOM kill
//     while the command ran and its main process died of SIGKILL that nobody
//     sent it; Limit "pids": the cgroup refused a fork while it ran and it failed.
//     With concurrent commands, another command's allocation can be what hit the
//     limit.
//
// At the gvisor level (sb a *gvisor.Env) the command's processes are in a PID
// namespace of their own, which ends with its main process: what it left behind
// dies then, not at cleanup; the figures are the command's as gVisor counts
// them, and a command has no terminal.
func RunIn(ctx context.Context, sb Persistent, spec Spec) (*Result, error) {
	c, err := StartIn(ctx, sb, spec)
	if err != nil {
		return nil, err
	}
	return c.Wait()
}

// Persistent is a sandbox that runs commands until it is destroyed: a
// *sandbox.Sandbox (the namespace level) or a *gvisor.Env (the gvisor level).
type Persistent interface {
	// UpperDir is the workspace overlay's upper layer.
	UpperDir() string
}

var (
	_ Persistent = (*sandbox.Sandbox)(nil)
	_ Persistent = (*gvisor.Env)(nil)
)

// Command is a command started by StartIn.
type Command struct {
	started chan struct{} // closed once the command runs or could not start
	ch      child         // nil if it could not start
	done    chan struct{}
	res     *Result
	err     error
}

// StartIn starts spec in sb as RunIn does and returns once the command runs (or
// failed to start: its Result is then ready). The run goes on in the background
// until Wait's Result; ctx still ends it.
func StartIn(ctx context.Context, sb Persistent, spec Spec) (*Command, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := spec.validateIn(); err != nil {
		return nil, err
	}
	start, level := startIn(sb)
	switch {
	case spec.Isolation != "" && spec.Isolation != level:
		return nil, invalid("isolation %q: the environment's is %q", spec.Isolation, level)
	case level == IsolationGvisor && spec.TTY != nil:
		return nil, invalid("a terminal is not available at the gvisor level")
	}
	spec.Isolation = level
	c := &Command{started: make(chan struct{}), done: make(chan struct{})}
	var once sync.Once
	mark := func(ch child) { once.Do(func() { c.ch = ch; close(c.started) }) }
	go func() {
		defer close(c.done)
		c.res, c.err = run(ctx, spec.withDefaults(), func(s Spec, io stdio, res *Result) (child, error) {
			ch, err := start(s, io, res)
			if err == nil {
				mark(ch)
			}
			return ch, err
		})
		mark(nil)
	}()
	<-c.started
	return c, nil
}

// Signal sends sig to every process of the command (nothing once it is over).
func (c *Command) Signal(sig syscall.Signal) {
	select {
	case <-c.done:
		return
	default:
	}
	if c.ch != nil {
		c.ch.signal(sig)
	}
}

// Resize changes the size of the command's terminal (Spec.TTY), which signals
// SIGWINCH to its foreground process group. It fails for a command without one
// and does nothing once the command is over.
func (c *Command) Resize(size TTY) error {
	if size.Rows == 0 || size.Cols == 0 {
		return invalid("terminal size %dx%d: give at least one row and one column", size.Cols, size.Rows)
	}
	tc, ok := c.ch.(terminalChild)
	if !ok {
		return invalid("the command has no terminal: start it with a tty")
	}
	select {
	case <-c.done:
		return nil
	default:
	}
	return tc.resize(size)
}

// Done is closed when the Result is ready.
func (c *Command) Done() <-chan struct{} { return c.done }

// Wait waits for the command and its cleanup; it returns what Run would.
func (c *Command) Wait() (*Result, error) {
	<-c.done
	return c.res, c.err
}

// validateIn rejects what a command in an existing sandbox cannot have.
func (s *Spec) validateIn() error {
	switch {
	case s.Workspace != "":
		return invalid("workspace: the environment's workspace is /workspace; give cwd relative to it")
	case s.Sandbox.WriteWorkspace || s.Sandbox.RootFS != "" || s.Sandbox.TmpSize != 0 || s.Sandbox.WorkspaceSize != 0 || s.Sandbox.RootSize != 0 ||
		s.Sandbox.DiffOut != "" || s.Sandbox.Network != nil || len(s.Sandbox.Mounts) > 0:
		return invalid("--write, --rootfs, --diff-out, --tmp-size, --workspace-size, --root-size, --mount and the network belong to the environment, not to a command")
	case s.Limits.Memory != 0 || s.Limits.Pids != 0 || s.Limits.CPUs != 0:
		return invalid("memory, pids and cpus limits belong to the environment, not to a command")
	case s.Isolation == IsolationProcess:
		return invalid("a command in an environment runs at the environment's isolation level")
	}
	return nil
}
