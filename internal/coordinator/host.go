package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/wire"
)

// ErrNotFound: no session has this id.
var ErrNotFound = errors.New("session not found")

// ErrEnded: the session has ended; it takes no more commands.
var ErrEnded = errors.New("the session has ended")

// ErrConflict: the command conflicts with the session's state (an approval
// answered already).
var ErrConflict = errors.New("conflict")

// ErrQuota: the tenant has as many sessions that have not ended as its quota
// allows.
var ErrQuota = errors.New("session quota exceeded")

// Config configures a Host. StateDir, Tenants and Policy are required.
type Config struct {
	// StateDir holds the sessions (sessions/ID/journal.db): the
	// coordinator's own, never a daemon's state directory.
	StateDir string
	// Tenants are the tenants whose sessions the host runs, by name. A
	// session belongs to the tenant that created it (recorded in its journal):
	// only that tenant's calls find it, and its environments are reached with
	// that tenant's daemon client. A recorded session of a tenant not here is
	// left on disk, not resumed.
	Tenants map[string]Tenant
	// Policy builds a session's agent policy; it holds the model credentials
	// and returns the strings (API keys) the session's events must not hold.
	Policy func(PolicySpec) (agent.Policy, []string, error)
	// Journal configures each session's store (Crash: the fault-injection
	// hook, also the loop's).
	Journal journal.Options
	// Logf, if set, is told of what happens to sessions outside any request.
	Logf func(format string, a ...any)
}

// Tenant is one tenant of a Host.
type Tenant struct {
	// Env is the environment daemon's client for the tenant's sessions: its
	// token names the daemon tenant whose environments they work in, never
	// another tenant's.
	Env *client.Client
	// Sessions bounds the tenant's sessions that have not ended or been
	// cancelled (0: unbounded); Create past it is ErrQuota.
	Sessions int
}

// tenant is a Tenant with its environment service.
type tenant struct {
	name   string
	env    *client.Client
	remote *wire.Remote
	quota  int
}

// Host hosts sessions. Its methods are safe for concurrent use; each takes
// the caller's tenant, and finds only that tenant's sessions.
type Host struct {
	cfg     Config
	tenants map[string]*tenant
	ctx     context.Context // the drivers'; ends with Close
	stop    context.CancelCauseFunc
	wg      sync.WaitGroup

	lock *os.File // flocked: one coordinator per state directory

	creating sync.Mutex // one Create at a time: the quota counts what is recorded
	mu       sync.Mutex
	sessions map[string]*session
}

// Open opens the sessions of cfg.StateDir and resumes every one that has not
// ended, each in its own driver.
func Open(cfg Config) (*Host, error) {
	if cfg.StateDir == "" || len(cfg.Tenants) == 0 || cfg.Policy == nil {
		return nil, errors.New("coordinator: a state directory, tenants (each with its environment daemon client) and a policy function are required")
	}
	tenants := map[string]*tenant{}
	for name, t := range cfg.Tenants {
		if t.Env == nil {
			return nil, fmt.Errorf("coordinator: tenant %q has no environment daemon client", name)
		}
		tenants[name] = &tenant{name: name, env: t.Env, remote: wire.NewRemote(t.Env), quota: t.Sessions}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "envs")); err == nil {
		return nil, fmt.Errorf("coordinator: %s is an environment daemon's state directory: give the coordinator a directory of its own", cfg.StateDir)
	}
	root := filepath.Join(cfg.StateDir, "sessions")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("coordinator: state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.StateDir, "coordinator.lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("coordinator: state directory: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("coordinator: state directory %s is used by another coordinator (%v)", cfg.StateDir, err)
	}
	ctx, stop := context.WithCancelCause(context.Background())
	h := &Host{cfg: cfg, tenants: tenants, ctx: ctx, stop: stop, sessions: map[string]*session{}, lock: lock}
	ents, err := os.ReadDir(root)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("coordinator: state directory: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !idPattern.MatchString(e.Name()) {
			continue
		}
		s, err := h.load(e.Name())
		if err != nil {
			cfg.Logf("session %s: %v", e.Name(), err)
			continue
		}
		h.sessions[s.id] = s
		if s.unfinished() {
			h.start(s)
		}
	}
	return h, nil
}

// Close stops the drivers and closes the sessions' journals. The sessions are
// not ended: each running one is fenced (its journal's next epoch is taken, so
// that its driver records nothing more, the result of a call in flight
// included), then its driver is let go (agent.ErrDetached; one that took the
// session after the fence stops without ending it). That leaves each as a
// crash would, for the next Open to resume.
func (h *Host) Close() error {
	h.mu.Lock()
	ss := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
	var errs []error
	for _, s := range ss {
		s.mu.Lock()
		running := s.cancel != nil
		s.mu.Unlock()
		if running {
			if _, err := s.store.Acquire(context.Background()); err != nil {
				errs = append(errs, fmt.Errorf("fence session %s: %w", s.id, err))
			}
		}
	}
	h.stop(agent.ErrDetached)
	h.wg.Wait()
	for _, s := range ss {
		errs = append(errs, s.store.Close())
	}
	errs = append(errs, h.lock.Close())
	return errors.Join(errs...)
}

var idPattern = regexp.MustCompile(`^s-[A-Z2-7]{16}$`)

// Create records a new session of the tenant and starts its driver.
func (h *Host) Create(tenant string, spec Spec) (Info, error) {
	t := h.tenants[tenant]
	if t == nil {
		return Info{}, fmt.Errorf("coordinator: tenant %q is not configured", tenant)
	}
	if err := spec.check(); err != nil {
		return Info{}, err
	}
	if _, _, err := h.cfg.Policy(spec.Policy); err != nil {
		return Info{}, fmt.Errorf("%w: policy: %v", ErrInvalid, err)
	}
	h.creating.Lock()
	defer h.creating.Unlock()
	if t.quota > 0 {
		if n := h.live(tenant); n >= t.quota {
			return Info{}, fmt.Errorf("%w: tenant %q has %d sessions that have not ended, as many as its quota (tenants.%s.quota.sessions) allows: cancel one or wait for one to end",
				ErrQuota, tenant, n, tenant)
		}
	}
	id := agent.NewSessionID()
	dir := filepath.Join(h.cfg.StateDir, "sessions", id)
	st, err := journal.Open(dir, h.cfg.Journal)
	if err != nil {
		return Info{}, err
	}
	// The tenant first: a session recorded without one would be the local
	// tenant's at the next start.
	if err := st.SetMeta("tenant", tenant); err != nil {
		st.Close()
		return Info{}, fmt.Errorf("coordinator: record the tenant: %w", err)
	}
	if err := st.SetMeta("spec", spec); err != nil {
		st.Close()
		return Info{}, fmt.Errorf("coordinator: record the spec: %w", err)
	}
	s := &session{id: id, dir: dir, store: st, spec: spec, tenant: t}
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	h.start(s)
	return h.info(s)
}

// live counts the tenant's sessions that have not ended or been cancelled.
func (h *Host) live(tenant string) int {
	n := 0
	for _, s := range h.of(tenant) {
		if s.unfinished() {
			n++
		}
	}
	return n
}

// of returns the tenant's sessions.
func (h *Host) of(tenant string) []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ss []*session
	for _, s := range h.sessions {
		if s.tenant.name == tenant {
			ss = append(ss, s)
		}
	}
	return ss
}

// List returns the tenant's sessions, oldest id first.
func (h *Host) List(tenant string) ([]Info, error) {
	ss := h.of(tenant)
	sort.Slice(ss, func(i, j int) bool { return ss[i].id < ss[j].id })
	out := []Info{}
	for _, s := range ss {
		i, err := h.info(s)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, nil
}

// Get returns one of the tenant's sessions' state, folded from its journal.
func (h *Host) Get(tenant, id string) (Info, error) {
	s, err := h.session(tenant, id)
	if err != nil {
		return Info{}, err
	}
	return h.info(s)
}

// session returns the tenant's session id. Another tenant's is not found, as
// one that does not exist: a caller learns nothing of other tenants' ids.
func (h *Host) session(tenant, id string) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.tenant.name != tenant {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return s, nil
}

// Cancel ends a session: its driver's context is cancelled (the session ends
// with stop reason cancelled), and a session no driver runs (paused) is
// recorded as cancelled so that no start resumes it.
func (h *Host) Cancel(tenant, id string) (Info, error) {
	s, err := h.session(tenant, id)
	if err != nil {
		return Info{}, err
	}
	st, err := s.store.Load()
	if err != nil {
		return Info{}, err
	}
	if st.End != nil {
		return Info{}, fmt.Errorf("%w (%s)", ErrEnded, st.End.StopReason)
	}
	if err := s.store.SetMeta("cancelled", true); err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	s.cancelled = true
	running := s.cancel != nil
	if running {
		s.cancel(errCancelled)
	}
	done := s.done
	s.mu.Unlock()
	if running {
		<-done // the loop ended the session (cancelled) and its environment
	} else if err := h.release(context.WithoutCancel(h.ctx), s); err != nil {
		return Info{}, err
	}
	return h.info(s)
}

var errCancelled = errors.New("cancelled through the coordinator")
