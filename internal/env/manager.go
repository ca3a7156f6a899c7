package env

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Manager is the Service: it owns every environment of one agentbox process. Its
// methods are safe for concurrent use.
//
// Environments outlive the process that made them by their files. Each one's
// sandbox init dies with the process (parent-death signal) and with the init its
// whole pid namespace, but the sandbox's upper layer (every file written) and host
// ids stay (sandbox.Config.Keep), and the environment's record says what it was
// (see stateRecord): the next Manager on the same StateDir restores it (Recover),
// under its id, on a fresh sandbox, its background commands reported lost.
// Artifacts, which are plain files, survive too.
type Manager struct {
	cfg   Config
	lock  *os.File // exclusive flock on StateDir while the Manager lives
	store *store
	empty string // lower layer of environments made from nothing

	mu     sync.Mutex
	envs   map[string]*environment
	snaps  map[string]*snapshot // in use (see release)
	tombs  map[string]tomb
	order  []string // tomb ids, oldest first
	closed bool
	// snapBytes is what each tenant's snapshots in snaps hold (Snapshot.Bytes),
	// and the seals under way have reserved (SnapshotQuotas).
	snapBytes map[string]int64
	// creating counts the environments creates and forks are making (reserve): not in envs until
	// adopted, they count against MaxEnvironments meanwhile.
	creating int
	// tearing counts teardowns under way, which Close waits for: an environment
	// leaves envs before its teardown ends (a dead init, the reaper).
	tearing sync.WaitGroup
	// refused are the recorded environments Recover left on disk unrestored
	// (Config.Restorable refused them): id → tenant.
	refused map[string]string

	// pools are the warm pools by shape (poolList in Config.Pools' order),
	// under mu; fill wakes their filler.
	pools      map[shape]*pool
	poolList   []*pool
	fill       chan struct{}
	fillerDone chan struct{}

	stop       chan struct{}
	reaperDone chan struct{}
}

// tomb is what is remembered of a destroyed environment.
type tomb struct {
	info Info
}

var _ Service = (*Manager)(nil)

// NewManager opens cfg.StateDir, which no other Manager may be using, runs
// Recover, and starts the reaper of expired and idle environments.
func NewManager(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("env: state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.StateDir, "lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("env: state directory: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("env: state directory %s is used by another agentbox process: %w", cfg.StateDir, ErrBusy)
	}
	m := &Manager{cfg: cfg, lock: lock, envs: map[string]*environment{}, snaps: map[string]*snapshot{}, snapBytes: map[string]int64{}, tombs: map[string]tomb{}, refused: map[string]string{},
		stop: make(chan struct{}), reaperDone: make(chan struct{}), fill: make(chan struct{}, 1), fillerDone: make(chan struct{})}
	fail := func(err error) (*Manager, error) {
		lock.Close()
		return nil, err
	}
	for _, d := range []string{m.envsDir(), filepath.Join(cfg.StateDir, "empty")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fail(fmt.Errorf("env: state directory: %w", err))
		}
	}
	// The blank lower layer must be traversable by nobody but the sandbox, which
	// gets it as an idmapped detached mount: 0755 so that it shows as such.
	m.empty = filepath.Join(cfg.StateDir, "empty")
	if err := os.Chmod(m.empty, 0o755); err != nil {
		return fail(err)
	}
	if m.store, err = openStore(cfg); err != nil {
		return fail(err)
	}
	if err := m.newPools(); err != nil {
		return fail(err)
	}
	if err := m.Recover(); err != nil {
		return fail(fmt.Errorf("env: recover: %w", err))
	}
	go m.reaper()
	go m.filler()
	return m, nil
}

func (m *Manager) envsDir() string { return filepath.Join(m.cfg.StateDir, "envs") }

// Close destroys every environment and pool member (with Config.KeepOnClose,
// leaves those a restart restores: see environment.leave), stops the reaper and
// the pools' filler and releases StateDir. Methods called after it fail with
// ErrDestroyed.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	<-m.reaperDone
	<-m.fillerDone
	m.mu.Lock()
	envs := make([]*environment, 0, len(m.envs))
	for _, e := range m.envs {
		envs = append(envs, e)
	}
	for _, p := range m.poolList {
		envs = append(envs, p.ready...)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(envs))
	for i, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m.cfg.KeepOnClose && e.restorable() {
				errs[i] = e.leave()
			} else {
				errs[i] = m.destroy(e)
			}
		}()
	}
	wg.Wait()
	m.tearing.Wait()
	m.lock.Close()
	return errors.Join(errs...)
}

// lookup returns owner's live environment id. Another tenant's environment, live
// or destroyed, is ErrNotFound, as is an id never seen; the owner's destroyed one
// is ErrDestroyed.
func (m *Manager) lookup(owner Owner, id string) (*environment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.envs[id]; ok && e.info.Owner.Tenant == owner.Tenant && owner.Tenant != "" {
		return e, nil
	}
	if t, ok := m.tombs[id]; ok && t.info.Owner.Tenant == owner.Tenant && owner.Tenant != "" {
		return nil, fmt.Errorf("environment %s: %w", id, ErrDestroyed)
	}
	return nil, fmt.Errorf("environment %s: %w", id, ErrNotFound)
}

// use looks up an environment and marks an API call on it; call the returned
// function when the call ends (it counts as activity for the idle timeout).
func (m *Manager) use(owner Owner, id string) (*environment, func(), error) {
	e, err := m.lookup(owner, id)
	if err != nil {
		return nil, nil, err
	}
	if err := e.begin(); err != nil {
		return nil, nil, err
	}
	return e, e.end, nil
}

// Get describes owner's environment, also a destroyed one (State "destroyed")
// while it is remembered.
func (m *Manager) Get(ctx context.Context, owner Owner, id string) (Info, error) {
	m.mu.Lock()
	e, ok := m.envs[id]
	t, dead := m.tombs[id]
	m.mu.Unlock()
	switch {
	case owner.Tenant == "":
	case ok && e.info.Owner.Tenant == owner.Tenant:
		return e.describe(), nil
	case dead && t.info.Owner.Tenant == owner.Tenant:
		return t.info, nil
	}
	return Info{}, fmt.Errorf("environment %s: %w", id, ErrNotFound)
}

// List returns owner's tenant's live environments that carry every label given,
// sorted by creation time.
func (m *Manager) List(ctx context.Context, owner Owner, labels map[string]string) ([]Info, error) {
	m.mu.Lock()
	var out []Info
outer:
	for _, e := range m.envs {
		if e.info.Owner.Tenant != owner.Tenant || owner.Tenant == "" {
			continue
		}
		for k, v := range labels {
			if got, ok := e.info.Labels[k]; !ok || got != v {
				continue outer
			}
		}
		out = append(out, e.describe())
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Destroy ends an environment: every process is killed, the private layer, the
// cgroup and the mounts are removed. Destroying the owner's environment again is
// not an error; another tenant's is ErrNotFound.
func (m *Manager) Destroy(ctx context.Context, owner Owner, id string) error {
	e, err := m.lookup(owner, id)
	if errors.Is(err, ErrDestroyed) {
		return nil
	}
	if err != nil {
		return err
	}
	return m.destroy(e)
}

// destroy removes e from the live set (remembering it) and tears it down. A
// concurrent second call waits for the first.
func (m *Manager) destroy(e *environment) error {
	m.mu.Lock()
	m.tearing.Add(1)
	defer m.tearing.Done()
	if m.unpool(e) {
		m.wakeFiller()
	}
	if m.envs[e.id] == e {
		delete(m.envs, e.id)
		info := e.describe()
		info.State = StateDestroyed
		m.tombs[e.id] = tomb{info: info}
		m.order = append(m.order, e.id)
		for len(m.order) > m.cfg.KeepDestroyed {
			delete(m.tombs, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.mu.Unlock()
	return e.teardown()
}

// reaper destroys (or pauses, see environment.due) environments whose TTL has
// passed or that have been idle (no API call in progress or made) for longer
// than their idle timeout or idle pause, and collects
// expired artifacts (store.gc).
func (m *Manager) reaper() {
	defer close(m.reaperDone)
	t := time.NewTicker(m.cfg.ReapInterval)
	defer t.Stop()
	gc := time.NewTicker(m.cfg.ArtifactGCInterval)
	defer gc.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-gc.C:
			_, _ = m.store.gc() // a file that cannot be removed now is tried again next time
		case now := <-t.C:
			m.reapDue(now)
		}
	}
}

// reapDue destroys or pauses the environments due at now (see environment.due).
func (m *Manager) reapDue(now time.Time) {
	m.mu.Lock()
	var doomed, idle []*environment
	for _, e := range m.envs {
		switch e.due(now) {
		case destroy:
			doomed = append(doomed, e)
		case pause:
			idle = append(idle, e)
		}
	}
	m.mu.Unlock()
	// Errors are the environment's, nobody to report to (a pause that fails is
	// tried again next time).
	for _, e := range doomed {
		_ = m.destroy(e)
	}
	for _, e := range idle {
		_ = e.pause(e.k.layer == LayerDisk)
	}
}

// newID returns a fresh environment id.
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return "env-" + hex.EncodeToString(b[:])
}
