package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// SessionOptions describe one session in an environment of its own.
type SessionOptions struct {
	// Env is the environment to make and the built-in tools to register on it
	// (tool.OpenEnv).
	Env tool.EnvOptions
	// Mount, if set, adds tools to the session's registry before it starts (agent
	// --mcp mounts an MCP server's pinned tools); the function it returns runs
	// when the session ends.
	Mount func(ctx context.Context, r *tool.Registry) (close func(), err error)
	// Permissions decide every call (the registry's gate) and answer what they
	// ask through their Approver; nil: no permission layer. The environment's
	// egress for http.fetch is Env.Egress.
	Permissions *Permissions
	Goal        string
	Policy      Policy
	Limits      Limits
	Model       string
	// Sinks receive the session's events (trace.NewJSONL, trace.NewProjector);
	// Redact are strings no event may hold (API keys).
	Sinks  []trace.Sink
	Redact []string
	// Store, if set, makes the session durable: its events are committed to the
	// store first, and a store that holds a session resumes it (recovery) in a
	// new environment re-derived from Env.Workspace and the recorded effects.
	Store *journal.Store
	// Crash is the fault-injection hook of a durable session (Durable.Crash and
	// journal.Options.Crash).
	Crash func(point string)
}

// Session is what a session left.
type Session struct {
	*Result
	EnvID string
	// Diff is the environment's final diff, taken whatever the stop reason: a
	// session that ran out of budget may still have fixed the task, and the
	// grader, not the agent, decides. DiffErr says why it could not be read.
	Diff    []byte
	DiffErr error
	// EventsAnchor is the hash of the last event, for agentbox trace verify
	// --anchor.
	EventsAnchor string
}

// RunSession makes the environment, runs one session in it with the built-in
// tools, takes its diff and destroys it. The error says why the session could not
// run; a log that could not be written is an error too, returned with the
// session it recorded.
func RunSession(ctx context.Context, o SessionOptions) (s *Session, err error) {
	if o.Permissions != nil {
		o.Env.Gate = o.Permissions
	}
	e, err := tool.OpenEnv(ctx, o.Env)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := e.Close(ctx); cerr != nil && err == nil {
			err = fmt.Errorf("destroy the agent's environment: %w", cerr)
		}
	}()
	if o.Permissions != nil && o.Permissions.ScanEgress == nil {
		o.Permissions.ScanEgress = e.ScanEgress()
	}
	if o.Mount != nil {
		closeMount, err := o.Mount(ctx, e.Registry)
		if err != nil {
			return nil, err
		}
		defer closeMount()
	}
	lo := trace.LogOptions{Session: NewSessionID(), Sinks: o.Sinks, Redact: o.Redact}
	ro := Options{Goal: o.Goal, Policy: o.Policy, Tools: e.Registry, Limits: o.Limits,
		Model: o.Model, EnvID: e.ID, Network: e.NetworkLog(), Permissions: o.Permissions}
	var res *Result
	var log *trace.Log
	if o.Store != nil {
		res, log, err = RunDurable(ctx, o.Store, e, ro, lo, o.Crash)
	} else {
		log = trace.NewLog(lo)
		ro.Log = log
		res, err = Run(ctx, ro)
	}
	if err != nil {
		return nil, err
	}
	s = &Session{Result: res, EnvID: e.ID, EventsAnchor: log.Anchor().Hash}
	s.Diff, s.DiffErr = e.Diff(context.WithoutCancel(ctx))
	if err := log.Err(); err != nil {
		return s, fmt.Errorf("write trace: %w", err)
	}
	return s, nil
}

// Restorer is the environment a durable session records and re-derives:
// Diff is its change from its start, Restore brings a fresh one to a recorded
// Diff (tool.Env).
type Restorer interface {
	Diff(ctx context.Context) ([]byte, error)
	Restore(ctx context.Context, diff []byte) error
}

// Rewinder is an environment that can bring its live workspace back to a
// recorded Diff: a write a correction made stale is rolled back with it.
type Rewinder interface {
	Rewind(ctx context.Context, diff []byte) error
}

// RunDurable runs a durable session in the environment w whose tools are
// o.Tools: it takes the store's next epoch (fencing any older driver), and for
// a session the store already holds re-derives the workspace in w (a local
// environment dies with its process, so the new one is brought to the last
// recorded state, Effect.Diff, and its content hash compared with the recorded
// one), then runs the loop, which recovers before any new action. lo's Journal,
// Session and After are set here; it returns the log it ran with.
func RunDurable(ctx context.Context, s *journal.Store, w Restorer, o Options, lo trace.LogOptions, crash func(string)) (*Result, *trace.Log, error) {
	drv, err := s.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	st := drv.State()
	d := &Durable{State: st, Epoch: drv.Epoch(), Diff: w.Diff, Crash: crash, Inbox: s.Steers, recorded: st.Workspace.Version}
	if r, ok := w.(Rewinder); ok {
		d.Rewind = r.Rewind
	}
	lo.Journal = drv
	if st.Seq > 0 {
		lo.Session, lo.After = st.Session.Session, anchorOf(st)
		if err := w.Restore(ctx, st.Workspace.Diff); err != nil {
			d.Drift = err.Error()
		}
		if found := o.Tools.Snapshot().Version; st.Workspace.Version != "" && found != st.Workspace.Version {
			d.Drift = strings.TrimPrefix(d.Drift+"; ", "; ") +
				fmt.Sprintf("the re-derived workspace (%s) is not the recorded one (%s): the workspace directory changed since", found, st.Workspace.Version)
		}
	}
	log := trace.NewLog(lo)
	if e := st.End; e != nil { // it ended before its driver died: nothing to run again
		return &Result{Session: lo.Session, StopReason: StopReason(e.StopReason), Detail: e.Detail, Steps: e.Steps,
			ToolCalls: e.ToolCalls, Usage: e.Usage, Duration: time.Duration(e.DurationMS) * time.Millisecond,
			Answer: e.Answer, State: o.Tools.Snapshot()}, log, nil
	}
	o.Log, o.Durable = log, d
	res, err := Run(ctx, o)
	return res, log, err
}
