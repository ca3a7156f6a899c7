package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Progress is what a running call tells its caller before it waits for its
// effect: the environment's process that runs it (exec.run). A durable
// session records it (trace.ToolExecutionProgress) so that its recovery asks
// the environment about the process instead of guessing (Registry.Reattach).
type Progress struct {
	Env     string
	Process string
}

type progressKey struct{}

// WithProgress returns a context whose calls tell f their Progress, as
// net/http/httptrace.WithClientTrace does for requests. f runs inside the
// call, before it waits; an error from it (the progress could not be
// recorded) stops the call's process, and the call fails with the error.
func WithProgress(ctx context.Context, f func(Progress) error) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// ReportProgress tells a call's caller its Progress (WithProgress): a handler
// calls it once its process runs, before it waits for it.
func ReportProgress(ctx context.Context, p Progress) error {
	if f, ok := ctx.Value(progressKey{}).(func(Progress) error); ok {
		return f(p)
	}
	return nil
}

// ErrGone: the environment does not know a call's recorded process (it is
// another environment, one restarted since, or the process was forgotten or
// lost): nothing can be learnt from it.
var ErrGone = errors.New("tool: the environment does not know the call's process")

// ErrElsewhere, an ErrGone, is a process recorded in another environment than
// the tool's: one that died with its driver (a local environment), and took
// what the process did with it.
var ErrElsewhere = fmt.Errorf("%w: it ran in another environment", ErrGone)

// Reattach is a tool's way back to a call's process after its driver died
// (Spec.Reattach): running says whether the process still ran when it was
// found, and wait returns the call's result from the process, without
// running anything again.
type Reattach func(ctx context.Context, args json.RawMessage, p Progress) (running bool, wait func(context.Context) (Result, error), err error)

// Attachment is a call's process found again by Registry.Reattach.
type Attachment struct {
	// Running: the process had not ended when it was found.
	Running bool
	r       *Registry
	spec    Spec
	call    Call
	wait    func(ctx context.Context) (Result, error)
	out     *Outcome // once waited for
}

// Reattach finds the process p of call c again, through its tool's
// Spec.Reattach: ErrGone when the environment does not know it, or the tool
// has no way back. The call was decided and its gate passed when it started:
// the gate is not asked again, but observes the result (Attachment.Wait).
func (r *Registry) Reattach(ctx context.Context, c Call, p Progress) (*Attachment, error) {
	r.mu.RLock()
	e, ok := r.tools[c.Tool]
	r.mu.RUnlock()
	if !ok || e.spec.Reattach == nil {
		return nil, fmt.Errorf("%w: %s cannot be reattached", ErrGone, c.Tool)
	}
	running, wait, err := e.spec.Reattach(ctx, c.Args, p)
	if err != nil {
		return nil, err
	}
	return &Attachment{Running: running, r: r, spec: e.spec, call: c, wait: wait}, nil
}

// Wait waits for the process and returns the call's outcome, as Call would
// have returned it (the same outcome again, once it is known); ErrGone if the
// environment lost the process meanwhile.
func (a *Attachment) Wait(ctx context.Context) (Outcome, error) {
	if a.out != nil {
		return *a.out, nil
	}
	res, err := a.wait(ctx)
	if errors.Is(err, ErrGone) {
		return Outcome{}, err
	}
	out := a.r.outcome(a.spec, res, "", err)
	a.out = &out
	// The gate sees the result as it would have seen the call's (the
	// taint of what the command printed): a crash launders nothing.
	if v, ok := a.r.Judge(ctx, a.call); ok {
		act, _ := a.spec.action(ctx, a.call.Args)
		a.r.gate.Observe(a.call, act, v, out.Envelope)
	}
	return out, nil
}
