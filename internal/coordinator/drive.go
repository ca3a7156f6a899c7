package coordinator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// sessionLabel labels the environment the coordinator creates for a session,
// so that one created just before a crash (its id not yet recorded) is found.
const sessionLabel = "agentbox.coordinator.session"

// start runs a driver for s unless one runs or s was cancelled.
func (h *Host) start(s *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil || s.cancelled || h.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancelCause(h.ctx)
	s.cancel, s.done, s.err = cancel, make(chan struct{}), ""
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := h.drive(ctx, s)
		// A daemon that is not there yet (or restarting) is waited for; a
		// session whose environment was lost goes on in a new one.
		for wait := time.Second; err != nil && (unavailable(err) || errors.Is(err, errEnvLost)) && ctx.Err() == nil; wait = min(2*wait, time.Minute) {
			h.cfg.Logf("session %s: %v; trying again in %s", s.id, err, wait)
			s.mu.Lock()
			s.err = err.Error()
			s.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(wait):
				s.mu.Lock()
				s.err = ""
				s.mu.Unlock()
				err = h.drive(ctx, s)
			}
		}
		if err != nil && h.ctx.Err() == nil {
			h.cfg.Logf("session %s: %v", s.id, err)
		}
		s.mu.Lock()
		if err != nil {
			s.err = err.Error()
		}
		s.cancel = nil
		close(s.done)
		s.mu.Unlock()
		cancel(nil)
	}()
}

// unavailable: the environment daemon did not answer (not there, or
// shutting down), as opposed to refusing the request.
func unavailable(err error) bool {
	return errors.Is(err, client.ErrNoDaemon) || client.IsCode(err, client.CodeUnavailable)
}

// drive runs the session in its environment with the durable driver, until
// it ends or pauses: a session with events is recovered first
// (agent.RunDurable), as agentbox resume recovers one.
func (h *Host) drive(ctx context.Context, s *session) error {
	sp := s.spec
	pol, redact, err := h.cfg.Policy(sp.Policy)
	if err != nil {
		return err
	}
	perms, err := sp.permissions()
	if err != nil {
		return err
	}
	lim := sp.Budgets.limits()
	wait := time.Duration(0)
	if sp.Approvals == ApprovalsWait {
		wait = max(lim.MaxWall, agent.DefaultMaxWall)
	}
	perms.Approver = &agent.Mailbox{Store: s.store, Wait: wait, Notify: func(r grant.Request) {
		h.cfg.Logf("session %s: approval %s awaits", s.id, r.ID)
	}}
	id, fresh, err := h.environment(ctx, s)
	if err != nil {
		return err
	}
	test := sp.TestCommand
	if len(test) == 0 {
		test = []string{"python3", "-B", "-m", "unittest", "-v"}
	}
	e, err := tool.OpenEnv(ctx, tool.EnvOptions{Service: s.tenant.remote, ID: id, Gate: perms,
		Tools: tool.BuiltinOptions{TestCommand: test, Env: []string{"PYTHONDONTWRITEBYTECODE=1"}}})
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	if sp.Ledger {
		if err := e.Registry.Register(agent.LedgerTool(filepath.Join(s.dir, "ledger"))); err != nil {
			return err
		}
	}
	model := sp.Policy.Model
	ro := agent.Options{Goal: sp.Goal, Policy: pol, Tools: e.Registry, Limits: lim, Model: model, EnvID: id, Permissions: perms}
	wctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	go h.watch(wctx, s.tenant, id, func() {
		// Fenced first, as Close does: what the driver had in flight in the
		// lost environment is left open, for recovery in the next one.
		if _, err := s.store.Acquire(context.WithoutCancel(ctx)); err != nil {
			h.cfg.Logf("session %s: fence: %v", s.id, err)
		}
		lost(errEnvLost)
	})
	res, _, err := agent.RunDurable(wctx, s.store, restorer{e, fresh}, ro, trace.LogOptions{Session: s.id, Redact: redact}, h.cfg.Journal.Crash)
	if errors.Is(context.Cause(wctx), errEnvLost) {
		return fmt.Errorf("environment %s: %w", id, errEnvLost)
	}
	if err != nil {
		return err
	}
	if res.StopReason == agent.StopJournal {
		return fmt.Errorf("the journal refused an event: %s", res.Detail)
	}
	if res.StopReason == agent.StopPaused || res.StopReason == agent.StopDetached {
		return nil // not ended: answered, or at the next start, it goes on
	}
	return h.release(context.WithoutCancel(ctx), s)
}

// restorer re-derives a session's workspace: a fresh environment (the one it
// worked in is gone) from the recorded diff; the environment it worked in is
// the state itself, and RunDurable compares its content hash with the
// recorded one.
type restorer struct {
	e     *tool.Env
	fresh bool
}

func (r restorer) Diff(ctx context.Context) ([]byte, error) { return r.e.Diff(ctx) }

func (r restorer) Restore(ctx context.Context, diff []byte) error {
	if !r.fresh {
		return nil
	}
	return r.e.Restore(ctx, diff)
}

// environment returns the id of the session's environment: the one it names,
// the one the coordinator made for it if it still runs (resumed if paused),
// or a new one (fresh: its workspace is the spec's start, not the session's
// recorded state).
func (h *Host) environment(ctx context.Context, s *session) (id string, fresh bool, err error) {
	sp := s.spec.Env
	if sp.ID != "" {
		if err := alive(ctx, s.tenant, sp.ID); err != nil {
			return "", false, fmt.Errorf("environment %s: %w", sp.ID, err)
		}
		if err := s.store.SetMeta("env", envRecord{ID: sp.ID}); err != nil {
			return "", false, err
		}
		return sp.ID, false, nil
	}
	var rec envRecord
	if err := s.store.Meta("env", &rec); err != nil && !errors.Is(err, journal.ErrNoSession) {
		return "", false, err
	}
	if rec.ID == "" { // made just before a crash, perhaps
		envs, err := s.tenant.env.List(ctx, map[string]string{sessionLabel: s.id})
		if err != nil {
			return "", false, fmt.Errorf("list environments: %w", err)
		}
		if len(envs) > 0 {
			rec = envRecord{ID: envs[0].ID, Owned: true}
		}
	}
	if rec.ID != "" {
		err := alive(ctx, s.tenant, rec.ID)
		if err == nil {
			return rec.ID, false, s.store.SetMeta("env", rec)
		}
		if !client.IsCode(err, client.CodeNotFound) {
			return "", false, fmt.Errorf("environment %s: %w", rec.ID, err)
		}
		h.cfg.Logf("session %s: environment %s is gone; re-deriving the workspace in a new one", s.id, rec.ID)
	}
	ttl := max(s.spec.Budgets.limits().MaxWall, agent.DefaultMaxWall) + time.Hour
	info, err := s.tenant.remote.Create(ctx, env.CreateOptions{Owner: env.Owner{Task: "session:" + s.id}, Workspace: sp.Workspace,
		Preset: sp.Preset, Template: sp.Template, TTL: ttl, Labels: map[string]string{sessionLabel: s.id},
		Limits: env.Limits{Memory: sp.Limits.MemoryBytes, Pids: sp.Limits.Pids, CPUs: sp.Limits.CPUs, WorkspaceSize: sp.Limits.WorkspaceBytes}})
	if err != nil {
		return "", false, fmt.Errorf("create the environment: %w", err)
	}
	return info.ID, true, s.store.SetMeta("env", envRecord{ID: info.ID, Owned: true})
}

// errEnvLost lets a driver go whose environment the daemon no longer has
// (destroyed by a daemon restart, or expired): the next driver resumes the
// session in a new environment, re-derived from the journal.
var errEnvLost = fmt.Errorf("%w: the environment is gone", agent.ErrDetached)

// envPoll is how often a driver's environment is checked for.
const envPoll = time.Second

// watch calls lost once the daemon answers that the tenant's environment id
// is gone; a daemon that does not answer is not taken as an answer.
func (h *Host) watch(ctx context.Context, t *tenant, id string, lost func()) {
	tick := time.NewTicker(envPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		e, err := t.env.Get(ctx, id)
		if client.IsCode(err, client.CodeNotFound) || (err == nil && e.State == "destroyed") {
			h.cfg.Logf("environment %s is gone: the session goes on in a new one", id)
			lost()
			return
		}
	}
}

// alive checks that the tenant's environment exists, resuming a paused one.
func alive(ctx context.Context, t *tenant, id string) error {
	e, err := t.env.Get(ctx, id)
	if err == nil && e.State == "paused" {
		_, err = t.env.Resume(ctx, id)
	}
	return err
}

// release destroys the environment the coordinator made for a session that
// will not run again.
func (h *Host) release(ctx context.Context, s *session) error {
	var rec envRecord
	if err := s.store.Meta("env", &rec); err != nil || !rec.Owned {
		return nil
	}
	if err := s.tenant.env.Destroy(ctx, rec.ID); err != nil && !client.IsCode(err, client.CodeNotFound) {
		return fmt.Errorf("destroy environment %s: %w", rec.ID, err)
	}
	return nil
}

// Answered is what an answer did: the request, the answer recorded in the
// mailbox (ApprovalResolved once the driver takes it), and the session after.
type Answered struct {
	Request grant.Request `json:"request"`
	Answer  grant.Answer  `json:"answer"`
	Session Info          `json:"session"`
}

// Answer answers an approval request of a session with agent.AnswerRequest,
// as agentbox sessions approve|deny DIR REQUEST does: a waiting driver records
// it and goes on; a paused session's driver is started again, to continue the
// held call. by names who answered.
func (h *Host) Answer(tenant, id, request string, allow bool, scope, by string) (Answered, error) {
	var out Answered
	i, err := h.deliver(tenant, id, func(ss *session) error {
		s := ss.store
		st, err := s.Load()
		if err != nil {
			return err // the journal's fault, not the request's
		}
		if st.Seq == 0 {
			return fmt.Errorf("%w: session %s has not started: it awaits no request (%s)", ErrInvalid, id, request)
		}
		out.Request, out.Answer, err = agent.AnswerRequest(s, request, allow, scope, by)
		switch {
		case errors.Is(err, journal.ErrAnswered):
			return fmt.Errorf("%w: %v", ErrConflict, err)
		case err != nil: // not awaited, or a scope that does not fit (grant.Reply)
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return nil
	})
	out.Session = i
	return out, err
}

// Resolve records a person's verdict on a call recovery left unknown, with
// agent.Resolve as agentbox sessions resolve DIR CALL does (outcome succeeded
// or failed), and starts the session's driver again. Only a session no driver
// runs is resolved: Resolve takes the journal's next epoch.
func (h *Host) Resolve(ctx context.Context, tenant, id, call, outcome, note string) (Info, error) {
	return h.deliver(tenant, id, func(s *session) error {
		st := s.store
		s.mu.Lock()
		running := s.cancel != nil
		s.mu.Unlock()
		if running {
			return fmt.Errorf("%w: session %s is running: only a paused session's unknown calls are resolved", ErrConflict, id)
		}
		if outcome != trace.OutcomeSucceeded && outcome != trace.OutcomeFailed {
			return fmt.Errorf("%w: as %q: use succeeded (its effect happened) or failed (it did not)", ErrInvalid, outcome)
		}
		state, err := st.Load()
		if err != nil {
			return err
		}
		if !slices.Contains(state.Unknown, call) {
			return fmt.Errorf("%w: call %q is not awaiting a person (unknown calls: %v)", ErrInvalid, call, state.Unknown)
		}
		return agent.Resolve(ctx, st, call, outcome, note)
	})
}

// Steer leaves a person's message (kind supplement, correct, replace or ask)
// in the session's steering inbox with agent.Steer, as agentbox sessions steer
// DIR does; a running driver takes it at its next safe point, a paused
// session's driver is started to take it.
func (h *Host) Steer(tenant, id, kind, message, by string) (trace.SteerRequest, Info, error) {
	var r trace.SteerRequest
	i, err := h.deliver(tenant, id, func(ss *session) error {
		s := ss.store
		st, err := s.Load()
		if err != nil {
			return err
		}
		if st.Seq == 0 {
			return fmt.Errorf("%w: session %s has not started: steer it once it runs", ErrInvalid, id)
		}
		r, err = agent.Steer(s, kind, message, by)
		switch {
		case errors.Is(err, agent.ErrEnded):
			return fmt.Errorf("%w: %v", ErrEnded, err)
		case err != nil: // the kind or the message
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return nil
	})
	return r, i, err
}

// deliver leaves something for one of the tenant's sessions' driver in its
// journal with put (an answer, a verdict, a steer), then starts a driver
// unless one runs, so that a paused session takes it at once.
func (h *Host) deliver(tenant, id string, put func(*session) error) (Info, error) {
	s, err := h.session(tenant, id)
	if err != nil {
		return Info{}, err
	}
	if err := put(s); err != nil {
		return Info{}, err
	}
	h.start(s)
	return h.info(s)
}
