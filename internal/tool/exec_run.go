package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
)

type execArgs struct {
	Command        string   `json:"command,omitempty" jsonschema:"a shell command line, run with sh -c"`
	Argv           []string `json:"argv,omitempty" jsonschema:"program and arguments, run without a shell (instead of command)"`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"directory relative to the workspace root to run in"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds (default and maximum set by the operator)"`
	Stdin          string   `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input"`
}

type execOut struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal,omitempty"`
	TimedOut        bool   `json:"timed_out,omitempty"`
	Limit           string `json:"limit,omitempty" jsonschema:"the limit that ended the command, if any"`
	DurationMS      int64  `json:"duration_ms"`
	StdoutBytes     int64  `json:"stdout_bytes"`
	StderrBytes     int64  `json:"stderr_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	Error           string `json:"error,omitempty" jsonschema:"why the command could not start"`
}

func (w *Workspace) execRun() Spec {
	return Spec{
		Describe: w.describeExec,
		Name:     "exec.run",
		Description: "Run a command in the sandbox, from the workspace root, with no network, and wait for it. " +
			"A non-zero exit or a timeout is a result (ok=true), not a tool error. Output is in the text: [stdout] then [stderr], " +
			"each cut to its head and tail when long, with a ref to the whole.",
		InputSchema: SchemaFor[execArgs](), OutputSchema: SchemaFor[execOut](),
		Effect: EffectExec, Scope: ScopeExec,
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a execArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			switch {
			case (a.Command == "") == (len(a.Argv) == 0):
				return Errorf(EINVAL, false, ActFixArgs, "give either command or argv")
			case len(a.Argv) > 0 && a.Argv[0] == "":
				return Errorf(EINVAL, false, ActFixArgs, "argv[0] is empty")
			case a.TimeoutSeconds < 0:
				return Errorf(EINVAL, false, ActFixArgs, "timeout_seconds must not be negative")
			}
			return nil
		},
		Handler: w.exec, Reattach: w.reattach,
	}
}

// exec starts the command in the background and tells the call's Progress
// its process before it waits, so that a driver that dies meanwhile leaves
// the process for its recovery to find (reattach) rather than run again.
func (w *Workspace) exec(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a execArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	timeout := w.o.ExecTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(timeout, time.Duration(a.TimeoutSeconds*float64(time.Second)))
	}
	req, err := w.request(ctx, a.argv(), a.Cwd, []byte(a.Stdin), timeout)
	if err != nil {
		return Result{}, err
	}
	proc, err := w.o.Service.Start(ctx, w.o.Owner, w.o.EnvID, req)
	if err != nil {
		w.changed(ctx)
		return Result{}, err
	}
	if err := ReportProgress(ctx, Progress{Env: w.o.EnvID, Process: proc}); err != nil {
		w.kill(context.WithoutCancel(ctx), proc)
		w.changed(ctx)
		return Result{}, err
	}
	r, err := w.wait(ctx, proc)
	w.changed(ctx)
	if err != nil {
		return Result{}, err
	}
	return w.ran(r, a.argv()), nil
}

func (a execArgs) argv() []string {
	if a.Command != "" {
		return []string{"/bin/sh", "-c", a.Command}
	}
	return a.Argv
}

// wait waits for exec.run's process. A call cancelled meanwhile kills it, as
// a cancelled Exec does.
func (w *Workspace) wait(ctx context.Context, proc string) (*runner.Result, error) {
	r, err := w.o.Service.Wait(ctx, w.o.Owner, w.o.EnvID, proc)
	if err == nil || ctx.Err() == nil {
		return r, err
	}
	if r, err = w.kill(context.WithoutCancel(ctx), proc); r != nil {
		r.Cancelled = true
	}
	return r, err
}

// kill ends a process and waits for its end.
func (w *Workspace) kill(ctx context.Context, proc string) (*runner.Result, error) {
	if err := w.o.Service.Signal(ctx, w.o.Owner, w.o.EnvID, proc, "KILL"); err != nil {
		return nil, err
	}
	return w.o.Service.Wait(ctx, w.o.Owner, w.o.EnvID, proc)
}

// reattachProbe is how long reattach waits for a process to say it ended
// before calling it still running.
const reattachProbe = 100 * time.Millisecond

// reattach is exec.run's Spec.Reattach: the process p recorded is asked for
// its end. One still running is waited for; one that ended gives its
// recorded result (the runner's capture of its output, and the artifacts of
// what was cut). A process of another environment (a local one died with its
// driver), one the environment forgot, or one it lost in a restart is ErrGone.
func (w *Workspace) reattach(ctx context.Context, raw json.RawMessage, p Progress) (bool, func(context.Context) (Result, error), error) {
	var a execArgs
	if err := decode(raw, &a); err != nil {
		return false, nil, err
	}
	if p.Env != w.o.EnvID {
		return false, nil, fmt.Errorf("%w (process %s of %s, not %s)", ErrElsewhere, p.Process, p.Env, w.o.EnvID)
	}
	probe, cancel := context.WithTimeout(ctx, reattachProbe)
	r, err := w.o.Service.Wait(probe, w.o.Owner, w.o.EnvID, p.Process)
	running := err != nil && probe.Err() != nil && ctx.Err() == nil
	cancel()
	switch {
	case running:
		return true, func(ctx context.Context) (Result, error) {
			r, err := w.wait(ctx, p.Process)
			w.changed(ctx)
			if err == nil && env.Lost(r) {
				err = fmt.Errorf("%w: process %s was lost while it was waited for", ErrGone, p.Process)
			}
			if err != nil {
				return Result{}, err
			}
			return w.ran(r, a.argv()), nil
		}, nil
	case err == nil && env.Lost(r):
		return false, nil, fmt.Errorf("%w: process %s was lost in a restart of its environment", ErrGone, p.Process)
	case err == nil:
		return false, func(ctx context.Context) (Result, error) {
			w.changed(ctx)
			return w.ran(r, a.argv()), nil
		}, nil
	case errors.Is(err, env.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return false, nil, fmt.Errorf("%w: %w", ErrGone, err)
	}
	return false, nil, err
}

// ran is exec.run's result of a command's end.
func (w *Workspace) ran(r *runner.Result, argv []string) Result {
	cmd := strings.Join(argv, " ")
	out, text, refs, cut := w.describeRun(r, cmd)
	return Result{Data: out, Text: text, Refs: refs, Source: "exec: " + cmd, Truncated: cut}
}

// run executes one command in the environment with the session's extra
// environment variables and the capture size.
func (w *Workspace) run(ctx context.Context, argv []string, cwd string, stdin []byte, timeout time.Duration) (*runner.Result, error) {
	req, err := w.request(ctx, argv, cwd, stdin, timeout)
	if err != nil {
		return nil, err
	}
	return w.o.Service.Exec(ctx, w.o.Owner, w.o.EnvID, req)
}

// request is a command of the session, its timeout cut to the call's deadline.
func (w *Workspace) request(ctx context.Context, argv []string, cwd string, stdin []byte, timeout time.Duration) (env.ExecRequest, error) {
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return env.ExecRequest{}, context.DeadlineExceeded
	}
	return env.ExecRequest{Argv: argv, Env: w.o.Env, Cwd: cwd, Stdin: stdin, Timeout: timeout,
		OutputLimit: w.o.MaxCapture}, nil
}

// describeRun turns a runner result into the envelope's data and text: each stream
// clipped for the model, its whole capture stored when clipped.
func (w *Workspace) describeRun(r *runner.Result, cmd string) (execOut, string, []Ref, bool) {
	out := execOut{ExitCode: r.ExitCode, TimedOut: r.TimedOut, Limit: string(r.Limit), DurationMS: r.DurationMS,
		StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes, Error: r.Error}
	if r.Signal != nil {
		out.Signal = *r.Signal
	}
	so, soRefs := w.clipStore(r.Stdout, "stdout", "exec:stdout: "+cmd)
	se, seRefs := w.clipStore(r.Stderr, "stderr", "exec:stderr: "+cmd)
	// The sandbox keeps only the head and tail of a stream past MaxCapture: the
	// stored artifact is then not the whole output either.
	out.StdoutTruncated = so.Truncated || r.StdoutTruncated
	out.StderrTruncated = se.Truncated || r.StderrTruncated
	var sb strings.Builder
	fmt.Fprintf(&sb, "[stdout]\n%s", so.Text)
	if so.Text != "" && !strings.HasSuffix(so.Text, "\n") {
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "[stderr]\n%s", se.Text)
	return out, sb.String(), append(soRefs, seRefs...), out.StdoutTruncated || out.StderrTruncated
}
