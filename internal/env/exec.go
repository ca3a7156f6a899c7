package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/runner"
)

// Exec runs a command in the environment and returns its Result (the runner's
// contract: see runner.RunIn for which figures are per command). ctx cancels it.
// When a stream's captured text was truncated, the whole stream is stored as an
// artifact of owner and named by Result.StdoutRef or StderrRef.
func (m *Manager) Exec(ctx context.Context, owner Owner, id string, r ExecRequest) (*runner.Result, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := e.running(); err != nil {
		return nil, err
	}
	spec, out, err := e.spec(r)
	if err != nil {
		return nil, err
	}
	if len(r.Stdin) > 0 {
		spec.Stdin = bytes.NewReader(r.Stdin)
	}
	sb := e.sandbox()
	res, err := runner.RunIn(ctx, sb, spec)
	ended := err != nil || res == nil || res.Error != "" || res.Signal != nil
	if ended && !e.current(sb) && !e.isDestroyed() {
		// A snapshot sealed the sandbox under the command (see Snapshot); how
		// the runner saw it depends on where its init was when killed.
		why := "killed"
		if err != nil {
			why = err.Error()
		} else if res != nil && res.Error != "" {
			why = res.Error
		}
		res, err = nil, fmt.Errorf("environment %s: a snapshot ended the command, run it again: %w (%s)", e.id, ErrBusy, why)
	}
	if errors.Is(err, runner.ErrInvalidSpec) {
		out.remove()
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if res != nil {
		e.keepOutputs(owner, "exec", res, out)
	}
	out.remove()
	return res, err
}

// outputs are where a command's whole stdout and stderr go.
type outputs struct{ stdout, stderr *output }

func (o outputs) remove() {
	o.stdout.remove()
	o.stderr.remove()
}

// spec turns a request into a runner.Spec whose whole output is kept (see
// output), spilling to files in the environment's state directory.
func (e *environment) spec(r ExecRequest) (runner.Spec, outputs, error) {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return runner.Spec{}, outputs{}, fmt.Errorf("%w: no command", ErrInvalid)
	}
	cwd := r.Cwd
	if path.IsAbs(cwd) { // "/workspace/sub" as the command would see it
		rel, ok := strings.CutPrefix(path.Clean(cwd), "/workspace")
		if !ok || (rel != "" && rel[0] != '/') {
			return runner.Spec{}, outputs{}, fmt.Errorf("%w: cwd %q is not in /workspace", ErrInvalid, cwd)
		}
		cwd = strings.TrimPrefix(rel, "/")
	}
	env, err := e.placeholders(r.Env)
	if err != nil {
		return runner.Spec{}, outputs{}, err
	}
	if e.img != nil {
		// The template's Env comes between the defaults and the request's,
		// as for run --template: its PATH, GOMODCACHE, NODE_PATH.
		env = append(slices.Clip(e.img.Config.Env), env...)
	}
	e.mu.Lock()
	e.nextOut++
	name := filepath.Join(e.dir, "out-"+strconv.Itoa(e.nextOut))
	e.mu.Unlock()
	out := outputs{stdout: &output{path: name + ".stdout"}, stderr: &output{path: name + ".stderr"}}
	return runner.Spec{
		TTY:    r.TTY,
		Argv:   r.Argv,
		Env:    env,
		Cwd:    cwd,
		Stdout: out.stdout,
		Stderr: out.stderr,
		Limits: runner.Limits{
			Timeout:     r.Timeout,
			OutputLimit: r.OutputLimit,
			OutputTotal: r.OutputTotal,
		},
	}, out, nil
}

// keepOutputs stores a stream whose capture was truncated as an artifact. A
// store failure (the tenant's artifact quota is full, say) leaves the Ref empty:
// the command's Result matters more.
func (e *environment) keepOutputs(owner Owner, proc string, res *runner.Result, out outputs) {
	for _, s := range []struct {
		truncated bool
		out       *output
		stream    string
		ref       *string
	}{{res.StdoutTruncated, out.stdout, "stdout", &res.StdoutRef}, {res.StderrTruncated, out.stderr, "stderr", &res.StderrRef}} {
		if !s.truncated {
			continue
		}
		r, size, err := s.out.stream()
		if err != nil {
			continue
		}
		a, err := e.m.store.put(r, size, Artifact{Owner: owner, Name: proc + "." + s.stream, EnvID: e.id,
			Source: "exec:" + e.id + ":" + proc + ":" + s.stream})
		if err == nil {
			*s.ref = a.Ref
		}
	}
}

// parseSignal accepts "TERM", "SIGTERM", "sigterm" or a number.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("%w: unknown signal %q", ErrInvalid, s)
}
