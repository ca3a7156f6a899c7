package tool

import (
	"context"
	"encoding/json"
	"fmt"
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
		Handler: w.exec,
	}
}

func (w *Workspace) exec(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a execArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	argv := a.Argv
	if a.Command != "" {
		argv = []string{"/bin/sh", "-c", a.Command}
	}
	timeout := w.o.ExecTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(timeout, time.Duration(a.TimeoutSeconds*float64(time.Second)))
	}
	r, err := w.run(ctx, argv, a.Cwd, []byte(a.Stdin), timeout)
	w.changed(ctx)
	if err != nil {
		return Result{}, err
	}
	out, text, refs, cut := w.describeRun(r, strings.Join(argv, " "))
	return Result{Data: out, Text: text, Refs: refs, Source: "exec: " + strings.Join(argv, " "), Truncated: cut}, nil
}

// run executes one command in the environment with the session's extra
// environment variables and the capture size.
func (w *Workspace) run(ctx context.Context, argv []string, cwd string, stdin []byte, timeout time.Duration) (*runner.Result, error) {
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	req := env.ExecRequest{Argv: argv, Env: w.o.Env, Cwd: cwd, Stdin: stdin, Timeout: timeout,
		OutputLimit: w.o.MaxCapture}
	return w.o.Service.Exec(ctx, w.o.Owner, w.o.EnvID, req)
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
