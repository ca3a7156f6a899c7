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

// Config configures a Host. StateDir, Env and Policy are required.
type Config struct {
	// StateDir holds the sessions (sessions/ID/journal.db): the
	// coordinator's own, never a daemon's state directory.
	StateDir string
	// Env is the environment daemon's client (its token fixes the tenant).
	Env *client.Client
	// Policy builds a session's agent policy; it holds the model credentials
	// and returns the strings (API keys) the session's events must not hold.
	Policy func(PolicySpec) (agent.Policy, []string, error)
	// Journal configures each session's store (Crash: the fault-injection
	// hook, also the loop's).
	Journal journal.Options
	// Logf, if set, is told of what happens to sessions outside any request.
	Logf func(format string, a ...any)
}

// Host hosts sessions. Its methods are safe for concurrent use.
type Host struct {
	cfg    Config
	remote *wire.Remote
	ctx    context.Context // the drivers'; ends with Close
	stop   context.CancelCauseFunc
	wg     sync.WaitGroup

	lock *os.File // flocked: one coordinator per state directory

	mu       sync.Mutex
	sessions map[string]*session
}

// Open opens the sessions of cfg.StateDir and resumes every one that has not
// ended, each in its own driver.
func Open(cfg Config) (*Host, error) {
	if cfg.StateDir == "" || cfg.Env == nil || cfg.Policy == nil {
		return nil, errors.New("coordinator: a state directory, an environment daemon and a policy function are required")
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
	h := &Host{cfg: cfg, remote: wire.NewRemote(cfg.Env), ctx: ctx, stop: stop, sessions: map[string]*session{}, lock: lock}
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

// Create records a new session and starts its driver.
func (h *Host) Create(spec Spec) (Info, error) {
	if err := spec.check(); err != nil {
		return Info{}, err
	}
	if _, _, err := h.cfg.Policy(spec.Policy); err != nil {
		return Info{}, fmt.Errorf("%w: policy: %v", ErrInvalid, err)
	}
	id := agent.NewSessionID()
	dir := filepath.Join(h.cfg.StateDir, "sessions", id)
	st, err := journal.Open(dir, h.cfg.Journal)
	if err != nil {
		return Info{}, err
	}
	if err := st.SetMeta("spec", spec); err != nil {
		st.Close()
		return Info{}, fmt.Errorf("coordinator: record the spec: %w", err)
	}
	s := &session{id: id, dir: dir, store: st, spec: spec}
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	h.start(s)
	return h.info(s)
}

// List returns every session, oldest id first.
func (h *Host) List() ([]Info, error) {
	h.mu.Lock()
	ss := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
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

// Get returns one session's state, folded from its journal.
func (h *Host) Get(id string) (Info, error) {
	s, err := h.session(id)
	if err != nil {
		return Info{}, err
	}
	return h.info(s)
}

func (h *Host) session(id string) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return s, nil
}

// Cancel ends a session: its driver's context is cancelled (the session ends
// with stop reason cancelled), and a session no driver runs (paused) is
// recorded as cancelled so that no start resumes it.
func (h *Host) Cancel(id string) (Info, error) {
	s, err := h.session(id)
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
