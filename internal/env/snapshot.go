package env

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// Snapshot bounds.
const (
	// MaxFork is the most environments one Fork makes (E2B's bound).
	MaxFork = 100
	// maxDepth bounds an environment's chain of snapshots: each is a layer its
	// workspace's every lookup may pass, and up to a WorkspaceSize of memory.
	maxDepth = 16
	// forkParallel sandboxes of a fork start at once.
	forkParallel = 4
)

// Snapshot is an environment's workspace at one moment, read-only: the layer
// its writes had made, over the snapshots below it. Environments continue from
// it (the one it was taken of, and every fork), each on a private upper layer.
type Snapshot struct {
	ID        string    `json:"id"`
	EnvID     string    `json:"env_id"` // the environment it was taken of
	Owner     Owner     `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	// Depth counts the layers: this snapshot's and those below it.
	Depth int `json:"depth"`
	// Bytes is what its layer holds (sandbox.Layer.Bytes), counted against
	// its tenant's Config.SnapshotQuotas while it lives.
	Bytes int64 `json:"bytes"`
}

// snapshot is a Snapshot's layer, kept while anything uses it.
type snapshot struct {
	info  Snapshot
	layer *sandbox.Layer
	below *snapshot
	refs  int // under Manager.mu: environments on it and snapshots above it
}

// layers is the chain from s down, top first (nil: none).
func (s *snapshot) layers() []*sandbox.Layer {
	var out []*sandbox.Layer
	for ; s != nil; s = s.below {
		out = append(out, s.layer)
	}
	return out
}

func (s *snapshot) depth() int {
	if s == nil {
		return 0
	}
	return s.info.Depth
}

// hold counts one more user of s (nil: none). A snapshot already let go (its
// last user was destroyed since s was found) is ErrDestroyed: counting it again
// would release the snapshots below it twice.
func (m *Manager) hold(s *snapshot) error {
	if s == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.refs <= 0 {
		return fmt.Errorf("snapshot %s of environment %s: %w", s.info.ID, s.info.EnvID, ErrDestroyed)
	}
	s.refs++
	return nil
}

// release counts one user of s less; the snapshot no environment uses any
// more is forgotten and its layer goes (then one user less of the one below).
func (m *Manager) release(s *snapshot) {
	m.mu.Lock()
	var gone []*snapshot
	for ; s != nil; s = s.below {
		if s.refs--; s.refs > 0 {
			break
		}
		delete(m.snaps, s.info.ID)
		m.snapBytes[s.info.Owner.Tenant] -= s.info.Bytes
		gone = append(gone, s)
	}
	m.mu.Unlock()
	for _, s := range gone {
		s.layer.Close()
	}
}

// Snapshot turns the environment's workspace writes into a read-only
// snapshot, in O(1): the sandbox is sealed (every process in it is killed, its
// upper layer kept as it is, nothing copied) and the environment continues,
// under the same id, in a new sandbox on a fresh upper layer above the
// snapshot. Processes are not carried: running and background commands end
// (killed), /tmp and copy-on-write mounts start afresh; /workspace and the
// template root's changes carry on. A paused environment is refused (ErrPaused): resume first.
//
// The snapshot lives while an environment uses it (this one, a fork, or an
// environment on a later snapshot above it); then its layer is removed.
func (m *Manager) Snapshot(ctx context.Context, owner Owner, id string) (Snapshot, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return Snapshot{}, err
	}
	defer done()
	s, err := m.snapshot(e)
	if err != nil {
		return Snapshot{}, err
	}
	return s.info, nil
}

// snapshot seals e's sandbox into a new snapshot on which e continues.
func (m *Manager) snapshot(e *environment) (*snapshot, error) {
	e.pauseMu.Lock()
	defer e.pauseMu.Unlock()
	if err := e.running(); err != nil {
		return nil, err
	}
	e.files.Lock()
	s, lost, err := m.seal(e)
	e.files.Unlock()
	if lost { // the sandbox is gone and nothing runs in its place
		m.destroy(e)
	}
	return s, err
}

// seal is snapshot's work under e.files. It fails before anything changed, or
// after e lost its sandbox (lost).
func (m *Manager) seal(e *environment) (_ *snapshot, lost bool, _ error) {
	e.mu.Lock()
	top, sb, destroyed := e.top, e.sb, e.destroyed
	e.sealing = true
	e.mu.Unlock()
	unseal := func() {
		e.mu.Lock()
		e.sealing = false
		e.mu.Unlock()
	}
	if destroyed {
		unseal()
		return nil, false, fmt.Errorf("environment %s: %w", e.id, ErrDestroyed)
	}
	ns, ok := sb.(*sandbox.Sandbox)
	if !ok {
		unseal()
		return nil, false, fmt.Errorf("%w: environment %s is at the gvisor level, whose sandboxes cannot be sealed: snapshots and forks need isolation namespace", ErrInvalid, e.id)
	}
	if top.depth() >= maxDepth {
		unseal()
		return nil, false, fmt.Errorf("%w: environment %s is on %d snapshots, the most one may have: create a fresh environment", ErrQuota, e.id, maxDepth)
	}
	tenant := e.info.Owner.Tenant
	reserved, err := m.reserveSnapshot(ns, e.id, tenant)
	if err != nil {
		unseal()
		return nil, false, err
	}
	layer, err := ns.Seal()
	if errors.Is(err, sandbox.ErrUnsupported) {
		m.unreserveSnapshot(tenant, reserved)
		unseal()
		return nil, false, fmt.Errorf("%w: environment %s: %v", ErrInvalid, e.id, err)
	}
	var size int64
	if err == nil {
		if size, err = layer.Bytes(); err != nil {
			layer.Close()
		}
	}
	if err != nil {
		m.unreserveSnapshot(tenant, reserved)
		return nil, true, fmt.Errorf("environment %s: snapshot: %w", e.id, err)
	}
	s := &snapshot{layer: layer, below: top, refs: 1, info: Snapshot{ID: newSnapshotID(), EnvID: e.id, Owner: e.info.Owner,
		CreatedAt: time.Now().UTC(), Depth: top.depth() + 1, Bytes: size}}
	m.mu.Lock()
	m.snaps[s.info.ID] = s
	m.snapBytes[tenant] += size - reserved // the sealed layer's size in place of the estimate
	m.mu.Unlock()
	// e's hold on top passes to s.
	old := e.root
	e.mu.Lock()
	e.top = s
	e.mu.Unlock()
	old.Close()
	if err := e.boot(); err != nil {
		return nil, true, fmt.Errorf("environment %s: snapshot: %w", e.id, err)
	}
	return s, false, nil
}

// reserveSnapshot counts what sealing ns would add to tenant's snapshots
// against its quota (none: nothing counted), measured with ns frozen, before
// the seal: past the quota it fails with ErrQuota, ns running on untouched.
// What ns writes between the measure and the seal's kill is counted after
// the check.
// The caller gives back the reservation (unreserveSnapshot) or replaces it with
// the sealed layer's size.
func (m *Manager) reserveSnapshot(ns *sandbox.Sandbox, id, tenant string) (int64, error) {
	quota := m.cfg.SnapshotQuotas[tenant]
	if quota <= 0 {
		return 0, nil
	}
	var size int64
	err := ns.Frozen(func() error {
		var err error
		size, err = ns.UpperBytes()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("environment %s: snapshot: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if held := m.snapBytes[tenant]; held+size > quota {
		return 0, fmt.Errorf("%w: environment %s: a snapshot of its %d bytes written, with the %d bytes tenant %s's snapshots hold, passes its snapshot quota of %d bytes: destroy environments on snapshots no longer needed (a snapshot goes with the last environment on it), or ask for a bigger snapshot_bytes",
			ErrQuota, id, size, held, tenant, quota)
	}
	m.snapBytes[tenant] += size
	return size, nil
}

func (m *Manager) unreserveSnapshot(tenant string, n int64) {
	m.mu.Lock()
	m.snapBytes[tenant] -= n
	m.mu.Unlock()
}

// ForkOptions say how many environments Fork makes and from what.
type ForkOptions struct {
	// Count is how many, 1 to MaxFork.
	Count int `json:"count"`
	// Snapshot is one of the environment's snapshots (Info.Snapshot or one
	// below it); empty: a new one, taken now (see Snapshot).
	Snapshot string `json:"snapshot,omitempty"`
}

// Fork makes o.Count environments from a snapshot of environment id, each in
// O(1): a sandbox started on the snapshot with a private upper layer, as the
// environment was created (template, workspace, limits, mounts, network
// policy, labels, timeouts) and owned by the same tenant. The Manager's
// MaxEnvironments counts them before any starts: a fork that would pass it is
// refused whole (ErrQuota), and one that fails part way destroys what it made.
func (m *Manager) Fork(ctx context.Context, owner Owner, id string, o ForkOptions) ([]Info, error) {
	if o.Count < 1 || o.Count > MaxFork {
		return nil, fmt.Errorf("%w: fork count %d: 1 to %d", ErrInvalid, o.Count, MaxFork)
	}
	e, done, err := m.use(owner, id)
	if err != nil {
		return nil, err
	}
	defer done()
	// Each child gives its slot back once it is in envs, or has failed.
	if err := m.reserve(o.Count); err != nil {
		return nil, err
	}
	var s *snapshot
	if o.Snapshot != "" {
		s, err = m.chainSnapshot(e, o.Snapshot)
	} else {
		s, err = m.snapshot(e)
	}
	if err != nil {
		m.unreserve(o.Count)
		return nil, err
	}
	if err := m.hold(s); err != nil { // against a destroy of e meanwhile
		return nil, err
	}
	defer m.release(s)

	e.mu.Lock()
	co := CreateOptions{Owner: owner, Labels: maps.Clone(e.info.Labels), TTL: e.ttl, Idle: e.idle, IdlePause: e.idlePause, OnTimeout: e.info.OnTimeout}
	if e.info.Network != nil {
		n := *e.info.Network
		co.Network = &n
	}
	e.mu.Unlock()
	out := make([]*environment, o.Count)
	errs := make([]error, o.Count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, forkParallel)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.unreserve(1)
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = m.forkOne(e, s, co)
		}()
	}
	wg.Wait()
	var infos []Info
	for i, c := range out {
		if errs[i] != nil {
			for _, c := range out {
				if c != nil {
					m.destroy(c)
				}
			}
			return nil, fmt.Errorf("environment %s: fork %d of %d: %w", e.id, i+1, o.Count, errs[i])
		}
		infos = append(infos, c.describe())
	}
	return infos, nil
}

// forkOne starts and adopts one environment of e's shape on s.
func (m *Manager) forkOne(e *environment, s *snapshot, co CreateOptions) (*environment, error) {
	var img *image.Image
	if e.img != nil {
		var err error
		if img, err = m.cfg.Images.Open(e.img.ID.String()); err != nil { // the source's image, even if the template was rebuilt
			return nil, fmt.Errorf("env: template %q: %w", e.info.Template, err)
		}
	}
	m.makeRoom()
	c, err := m.start(e.k, img, e.mounts, s, nil)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	var expires time.Time
	if co.TTL > 0 {
		expires = now.Add(co.TTL)
	}
	if err := m.adopt(c, co, now, expires); err != nil {
		return nil, err
	}
	return c, nil
}

// chainSnapshot finds snapshot id among those e continues from: another
// tenant's, or one e does not stand on, is ErrNotFound.
func (m *Manager) chainSnapshot(e *environment, id string) (*snapshot, error) {
	e.mu.Lock()
	top := e.top
	e.mu.Unlock()
	for s := top; s != nil; s = s.below {
		if s.info.ID == id {
			return s, nil
		}
	}
	return nil, fmt.Errorf("snapshot %s of environment %s: %w", id, e.id, ErrNotFound)
}

// newSnapshotID returns a fresh snapshot id.
func newSnapshotID() string {
	var b [12]byte
	rand.Read(b[:])
	return "snap-" + hex.EncodeToString(b[:])
}
