package env

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/gvisor"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Info.State values.
const (
	StateRunning   = "running"
	StatePaused    = "paused"
	StateDestroyed = "destroyed"
)

// Label bounds.
const (
	maxLabels     = 64
	maxLabelKey   = 63
	maxLabelValue = 256
)

// environment is one persistent sandbox with its workspace root.
type environment struct {
	m      *Manager
	id     string
	info   Info          // immutable after Create, but for LastUsed (in mu)
	k      shape         // what its sandbox is started with (again after a snapshot, and for a fork)
	lower  string        // the host directory below the overlay
	img    *image.Image  // the root's template, held open while the environment lives (nil: none)
	mounts []Mount       // CreateOptions.Mounts, host paths included
	dir    string        // StateDir/envs/<id>: command outputs on their way to the store
	proxy  *egress.Proxy // CreateOptions.Network's; closed after sb
	// sb, uid (the sandbox user's host uid and gid), root and top (the snapshot
	// the workspace continues from, nil: none) change at a snapshot, under
	// files and mu; sealing is set while the last sandbox is sealed.
	sb      box
	uid     int
	root    *workspace.Root
	top     *snapshot
	sealing bool
	idle    time.Duration
	ttl     time.Duration // what Resume restarts after a pause at the TTL
	// idlePause pauses the environment after this long without an API call.
	idlePause time.Duration
	// pauseMu serialises Pause and Resume (which take up to the freezer's timeout).
	pauseMu sync.Mutex
	// from is the leftover the first boot takes over (Recover), nil: none.
	from *sandbox.Leftover
	// opts is what adopt was given (see saveRecord); recordMu serialises writes
	// of the record.
	opts     CreateOptions
	recordMu sync.Mutex

	// netChanged is closed and replaced (under netMu) whenever the proxy logs a
	// connection: NetworkEvents waits on it.
	netMu      sync.Mutex
	netChanged chan struct{}

	ctx    context.Context // ends when the environment is destroyed
	cancel context.CancelFunc

	mu        sync.Mutex
	lastUsed  time.Time
	inflight  int
	destroyed bool
	paused    bool // Info.PausedAt is set
	onDisk    bool // paused with its layers evicted (Info.PausedToDisk)
	procs     map[string]*process
	finished  []string // ids of finished procs, oldest first
	nextProc  int
	nextOut   int

	// files is held shared by every file operation and exclusively by Diff (which
	// reads the upper layer and must see no API write meanwhile) and teardown.
	files sync.RWMutex
	// bg counts background commands' goroutines.
	bg sync.WaitGroup

	teardownOnce sync.Once
	teardownErr  error
}

// box is an environment's sandbox at its isolation level: a *sandbox.Sandbox
// or a *gvisor.Env (which has no snapshots).
type box interface {
	runner.Persistent
	// Frozen runs fn with every process of the sandbox frozen.
	Frozen(fn func() error) error
	Pause() error
	Resume() error
	Destroy() (survivors int, err error)
	// WorkspaceDir is /workspace as the sandbox sees it (see sandbox's).
	WorkspaceDir() *os.File
}

// Create starts an environment: a persistent sandbox whose /workspace is an
// overlay of the workspace directory or workspace preset (read-only, shared) and a
// private upper layer of Limits.WorkspaceSize. With neither, /workspace starts
// empty. Its root file system is the template's image, or the host's system
// directories.
//
// A create whose shape (see Pool) a warm pool serves claims one of its members
// instead of starting a sandbox; what differs per create (owner, labels,
// timeouts, the network policy) is applied to it here, as to a fresh one.
func (m *Manager) Create(ctx context.Context, o CreateOptions) (Info, error) {
	if o.Isolation == "" {
		o.Isolation = m.cfg.Isolation
	}
	if err := validate(&o); err != nil {
		return Info{}, err
	}
	lower, err := m.lowerOf(o)
	if err != nil {
		return Info{}, err
	}
	img, err := m.openTemplate(o.Template)
	if err != nil {
		return Info{}, err
	}
	lim := m.limits(o.Limits)
	if err := m.reserve(1); err != nil {
		if img != nil {
			img.Close()
		}
		return Info{}, err
	}
	defer m.unreserve(1)
	ttl := o.TTL
	if ttl == 0 {
		ttl = m.cfg.DefaultTTL
	}
	k := shapeOf(o, lower, lim, ttl)
	e := m.claim(k, img)
	if e != nil {
		if img != nil {
			img.Close() // the member holds its own
		}
	} else {
		m.makeRoom()
		if e, err = m.start(k, img, o.Mounts, nil, nil); err != nil {
			return Info{}, err
		}
	}
	now := time.Now().UTC()
	var expires time.Time
	if ttl > 0 {
		expires = now.Add(ttl)
	}
	if err := m.adopt(e, o, now, expires); err != nil {
		return Info{}, err
	}
	return e.describe(), nil
}

// reserve counts n environments a create or fork is about to make against
// MaxEnvironments from before it claims or starts a sandbox until unreserve
// (after adopt has put them in envs): creates and forks under way and the pool
// filler see them while they start, so concurrent ones never pass the cap
// together. It fails with ErrQuota when the environments, the ones under way
// and n would pass the cap; pool members give way to a create (makeRoom).
func (m *Manager) reserve(n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("env: shutting down: %w", ErrBusy)
	}
	if max := m.cfg.MaxEnvironments; max > 0 && len(m.envs)+m.creating+n > max {
		return fmt.Errorf("%w: %d environments and %d more asked for, the server's maximum is %d", ErrQuota, len(m.envs)+m.creating, n, max)
	}
	m.creating += n
	return nil
}

func (m *Manager) unreserve(n int) {
	m.mu.Lock()
	m.creating -= n
	m.mu.Unlock()
	m.wakeFiller() // room for pool members, if the create failed
}

// limits fills in the zero fields of l with the Manager's defaults, then the
// sandbox's.
func (m *Manager) limits(l Limits) Limits {
	d := m.cfg.Defaults
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Memory == 0 {
		l.Memory = sandbox.DefaultMemory()
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.Pids == 0 {
		l.Pids = sandbox.DefaultPids
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.WorkspaceSize == 0 {
		l.WorkspaceSize = d.WorkspaceSize
	}
	if l.WorkspaceSize == 0 {
		l.WorkspaceSize = sandbox.DefaultWorkspaceSize
	}
	return l
}

// start starts the sandbox of an environment of shape k, with no owner yet: a
// networked one's proxy refuses everything until adopt gives it its policy.
// img (nil: none) passes to the environment, which closes it at teardown; start
// closes it when it fails. top (nil: none) is the snapshot its workspace
// continues from; the environment holds it from here on (start releases it
// when it fails).
//
// The sandbox keeps its upper layer when this process dies (sandbox.Config.Keep)
// and the environment's record says where, so that a later Manager restores it:
// from is such a record (Recover), whose environment directory is reused and
// whose sandbox's upper layer is taken over. Otherwise the record written here
// has no owner (a pool member's, discarded by Recover) until adopt rewrites it.
// An environment on snapshot layers has none: the layers die with the process.
func (m *Manager) start(k shape, img *image.Image, ms []Mount, top *snapshot, from *stateRecord) (_ *environment, err error) {
	e := &environment{m: m, id: newID(), k: k, lower: k.lower, img: img, mounts: ms, top: top, procs: map[string]*process{}}
	if from != nil {
		e.id, e.from = from.ID, &from.Sandbox
	}
	if err := m.hold(top); err != nil {
		if img != nil {
			img.Close()
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			if img != nil {
				img.Close()
			}
			m.release(top)
		}
	}()
	lim := k.limits
	e.info = Info{ID: e.id, Limits: lim, Preset: k.preset, Template: k.template, State: StateRunning, Isolation: k.isolation, Layer: k.layer}
	for _, mt := range ms {
		// Info never shows a host path: the targets and modes only.
		e.info.Mounts = append(e.info.Mounts, Mount{Target: mt.Target, Mode: mt.Mode})
	}
	e.dir = filepath.Join(m.envsDir(), e.id)
	// removeDir undoes what start made of e.dir: a restored environment's stays.
	removeDir := func() {
		if from == nil {
			os.RemoveAll(e.dir)
		}
	}
	if from == nil {
		if err := os.Mkdir(e.dir, 0o700); err != nil {
			return nil, fmt.Errorf("env: %w", err)
		}
	}
	if k.network {
		e.netChanged = make(chan struct{})
		e.proxy, err = egress.NewProxy(egress.Config{Policy: egress.Policy{}, CALifetime: k.caLife, LogSize: maxNetworkEvents,
			UpstreamRoots: m.cfg.EgressRoots,
			OnEvent:       func(egress.Event) { e.netNotify() }})
		if err != nil {
			removeDir()
			return nil, fmt.Errorf("env: egress proxy: %w", err)
		}
	}
	// Before boot: its watcher may tear the environment down at once.
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if err := e.boot(); err != nil {
		e.cancel()
		if e.proxy != nil {
			e.proxy.Close()
		}
		removeDir()
		return nil, err
	}
	if from == nil && top == nil && k.isolation != runner.IsolationGvisor { // a gVisor environment dies with this process: no record
		if err := e.writeRecord(&stateRecord{Version: recordVersion, ID: e.id, Sandbox: e.sb.(*sandbox.Sandbox).Leftover()}); err != nil {
			e.teardown()
			return nil, err
		}
	}
	return e, nil
}

// boot starts e's sandbox (on e.top's layers) and opens its workspace: at
// start, and again after a snapshot sealed the last one. A watcher destroys
// the environment when its init dies on its own (the OOM killer may pick it),
// pooled or not: callers then hear ErrDestroyed instead of internal errors,
// and a pool replaces its member. The caller holds e.files or is start.
func (e *environment) boot() error {
	k := e.k
	if k.isolation == runner.IsolationGvisor {
		gv, err := gvisor.StartEnv(e.m.gvisorConfig(k, e.mounts))
		if err != nil {
			return fmt.Errorf("env: start sandbox: %w", err)
		}
		return e.opened(gv, gv.UID(), gv.WorkspaceDir(), func() { gv.Wait() })
	}
	var mounts []sandbox.Mount
	for _, mt := range e.mounts {
		mounts = append(mounts, mt.sandbox())
	}
	cfg := sandbox.Config{
		From:          e.from,
		Persistent:    true,
		Workspace:     k.lower,
		Layers:        e.top.layers(),
		Image:         e.img,
		Mounts:        mounts,
		WorkspaceSize: k.limits.WorkspaceSize,
		DiskLayers:    k.layer == LayerDisk,
		Memory:        k.limits.Memory,
		Pids:          k.limits.Pids,
		CPUs:          k.limits.CPUs,
	}
	if e.top == nil {
		cfg.Keep = filepath.Join(e.dir, recordName)
	} else if err := os.Remove(filepath.Join(e.dir, recordName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("env: state record: %w", err) // on layers that die with this process
	}
	if e.proxy != nil {
		cfg.Network = &sandbox.Network{Proxy: e.proxy}
	}
	sb, err := sandbox.Start(cfg, sandbox.Stdio{})
	e.from = nil // taken over, or refused: never again
	if err != nil {
		return fmt.Errorf("env: start sandbox: %w", err)
	}
	return e.opened(sb, sb.HostUID(), sb.WorkspaceDir(), func() { sb.Wait() })
}

// opened makes sb e's sandbox once its workspace (wsDir, as uid) is open, and
// watches it with wait, which returns when its init has died.
func (e *environment) opened(sb box, uid int, wsDir *os.File, wait func()) error {
	ws := "/proc/self/fd/" + strconv.Itoa(int(wsDir.Fd()))
	m := e.m
	opts := workspace.Options{MaxReadBytes: m.cfg.MaxReadBytes, MaxFileBytes: m.cfg.MaxFileBytes, AllowHardlinks: m.cfg.AllowHardlinks}
	var root *workspace.Root
	err := asUser(uid, uid, func() error {
		var err error
		root, err = workspace.OpenRoot(ws, opts)
		return err
	})
	if err != nil {
		sb.Destroy()
		return fmt.Errorf("env: open workspace: %w", err)
	}
	e.mu.Lock()
	if e.destroyed { // a teardown ran while the last one was sealed
		e.mu.Unlock()
		root.Close()
		sb.Destroy()
		return fmt.Errorf("environment %s: %w", e.id, ErrDestroyed)
	}
	e.sb, e.uid, e.root, e.sealing = sb, uid, root, false
	e.mu.Unlock()
	go func() {
		wait()
		if e.current(sb) {
			m.destroy(e)
		}
	}()
	return nil
}

// sandbox returns e's sandbox now (a snapshot replaces it).
func (e *environment) sandbox() box {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sb
}

// current reports whether sb is e's sandbox and not being sealed: its death
// is the environment's.
func (e *environment) current(sb box) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sb == sb && !e.sealing
}

// adopt gives a started environment (fresh, claimed from a pool or restored)
// what differs per create, records it (see stateRecord) and makes it live.
// created is its creation time, expires the end of its TTL (zero: none).
func (m *Manager) adopt(e *environment, o CreateOptions, created, expires time.Time) error {
	now := time.Now().UTC()
	idle, idlePause := o.Idle, o.IdlePause
	if idle == 0 {
		idle = m.cfg.DefaultIdle
	}
	if idlePause == 0 {
		idlePause = m.cfg.DefaultIdlePause
	}
	e.mu.Lock()
	e.info.Owner, e.info.Labels, e.info.CreatedAt = o.Owner, o.Labels, created
	e.lastUsed = now
	e.info.ExpiresAt = expires
	var ttl time.Duration
	if !expires.IsZero() {
		ttl = expires.Sub(created)
	}
	e.idle, e.ttl, e.idlePause = idle, ttl, idlePause
	e.info.OnTimeout = o.OnTimeout
	if e.info.OnTimeout == "" {
		e.info.OnTimeout = OnTimeoutDestroy
	}
	if o.Network != nil {
		n := *o.Network
		e.info.Network = &n
	}
	e.opts = o
	e.opts.Limits = e.info.Limits // filled in: a restart under other defaults keeps them
	e.mu.Unlock()
	if o.Network != nil {
		if err := e.proxy.SetPolicy(o.Network.policy()); err != nil {
			e.teardown()
			return fmt.Errorf("env: egress proxy: %w", err) // validated: a bug
		}
	}
	if err := e.saveRecord(); err != nil {
		e.teardown()
		return err
	}
	m.mu.Lock()
	if m.closed || e.isDestroyed() {
		m.mu.Unlock()
		e.teardown()
		if m.closed {
			return fmt.Errorf("env: shutting down: %w", ErrBusy)
		}
		return fmt.Errorf("env: the sandbox died as it started: %w", ErrDestroyed)
	}
	m.envs[e.id] = e
	m.mu.Unlock()
	return nil
}

// gvisorConfig is the gVisor sandbox of an environment of shape k. Its
// commands run as the lower layer's owner, as at the gvisor level of a run, or
// as the sandbox user (uid 1000) on an empty workspace.
func (m *Manager) gvisorConfig(k shape, ms []Mount) gvisor.Config {
	cfg := gvisor.Config{
		Workspace:     k.lower,
		UID:           nsinit.UID,
		GID:           nsinit.GID,
		TmpSize:       sandbox.DefaultTmpSize,
		ShmSize:       sandbox.DefaultShmSize,
		WorkspaceSize: k.limits.WorkspaceSize,
		Memory:        k.limits.Memory,
		Pids:          k.limits.Pids,
		CPUs:          k.limits.CPUs,
	}
	for _, mt := range ms {
		cfg.Mounts = append(cfg.Mounts, gvisor.Mount{Source: mt.Source, Target: mt.Target, CopyOnWrite: mt.Mode == MountCopyOnWrite})
	}
	var st unix.Stat_t
	if k.lower != m.empty && unix.Stat(k.lower, &st) == nil {
		cfg.UID, cfg.GID = st.Uid, st.Gid
	}
	return cfg
}

// isDestroyed reports whether teardown has begun.
func (e *environment) isDestroyed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.destroyed
}

// validate checks what Create is asked for.
func validate(o *CreateOptions) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	l := o.Limits
	switch {
	case o.Owner.Tenant == "":
		return bad("no owner tenant")
	case o.Workspace != "" && o.Preset != "":
		return bad("give a workspace or a workspace preset, not both")
	case o.TTL < 0 || o.Idle < 0 || o.IdlePause < 0:
		return bad("ttl, idle timeout and idle pause must not be negative")
	case o.Isolation != "" && o.Isolation != runner.IsolationNamespace && o.Isolation != runner.IsolationGvisor:
		return bad("isolation %q: namespace or gvisor (an environment is a sandbox)", o.Isolation)
	case o.Isolation == runner.IsolationGvisor && (o.Network != nil || o.Template != ""):
		return bad("network and templates need isolation namespace: a gvisor environment has the host's system directories and loopback only")
	case o.Layer != "" && o.Layer != LayerMemory && o.Layer != LayerDisk:
		return bad("layer %q: %q or %q", o.Layer, LayerMemory, LayerDisk)
	case o.Isolation == runner.IsolationGvisor && o.Layer == LayerDisk:
		return bad("layer disk needs isolation namespace: a gvisor environment's upper layer is a tmpfs of its own")
	case o.Isolation == runner.IsolationGvisor && slices.ContainsFunc(o.Mounts, func(mt Mount) bool { return mt.Mode == MountReadWrite }):
		return bad("mounts of mode rw need isolation namespace: a gvisor environment's mounts are ro or cow")
	case o.OnTimeout != "" && o.OnTimeout != OnTimeoutDestroy && o.OnTimeout != OnTimeoutPause:
		return bad("on_timeout %q: %q or %q", o.OnTimeout, OnTimeoutDestroy, OnTimeoutPause)
	case l.Memory < 0 || (l.Memory > 0 && l.Memory < 1<<20):
		return bad("memory limit %d: at least 1 MiB", l.Memory)
	case l.Pids < 0:
		return bad("pids limit %d is negative", l.Pids)
	case l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) || (l.CPUs > 0 && l.CPUs < 0.01) || l.CPUs > 1<<16:
		return bad("cpus %v: 0.01 to 65536", l.CPUs)
	case l.WorkspaceSize < 0 || (l.WorkspaceSize > 0 && l.WorkspaceSize < 1<<20):
		return bad("workspace size %d: at least 1 MiB", l.WorkspaceSize)
	case len(o.Labels) > maxLabels:
		return bad("%d labels, at most %d", len(o.Labels), maxLabels)
	}
	for k, v := range o.Labels {
		if k == "" || len(k) > maxLabelKey || len(v) > maxLabelValue {
			return bad("label %q: keys of 1 to %d bytes, values of at most %d", k, maxLabelKey, maxLabelValue)
		}
	}
	for i, mt := range o.Mounts {
		if mt.Mode == "" {
			o.Mounts[i].Mode = MountReadOnly
		}
		if err := sandbox.CheckMount(mt.sandbox()); err != nil {
			return bad("%v", err)
		}
	}
	if o.Network != nil {
		return o.Network.check()
	}
	return nil
}

func (mt Mount) sandbox() sandbox.Mount {
	return sandbox.Mount{Source: mt.Source, Target: mt.Target, Mode: sandbox.MountMode(mt.Mode)}
}

// lowerOf resolves the environment's lower layer.
func (m *Manager) lowerOf(o CreateOptions) (string, error) {
	switch {
	case o.Preset != "":
		dir, ok := m.cfg.Presets[o.Preset]
		if !ok {
			return "", fmt.Errorf("%w: no workspace preset %q", ErrInvalid, o.Preset)
		}
		return dir, nil
	case o.Workspace != "":
		if !filepath.IsAbs(o.Workspace) {
			return "", fmt.Errorf("%w: workspace %q is not an absolute path", ErrInvalid, o.Workspace)
		}
		fi, err := os.Stat(o.Workspace)
		if err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%w: workspace %q is not a directory", ErrInvalid, o.Workspace)
		}
		return filepath.Clean(o.Workspace), nil
	}
	return m.empty, nil
}

// begin marks the start of an API call; it fails once the environment is being
// destroyed.
func (e *environment) begin() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return fmt.Errorf("environment %s: %w", e.id, ErrDestroyed)
	}
	e.inflight++
	e.lastUsed = time.Now().UTC()
	return nil
}

func (e *environment) end() {
	e.mu.Lock()
	e.inflight--
	e.lastUsed = time.Now().UTC()
	e.mu.Unlock()
}

// describe returns the environment's Info as of now.
func (e *environment) describe() Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := e.info
	info.LastUsed = e.lastUsed
	if e.top != nil {
		info.Snapshot = e.top.info.ID
	}
	if e.paused {
		info.State = StatePaused
		info.PausedToDisk = e.onDisk
	}
	return info
}

// Reaper actions (environment.due).
const (
	keep = iota
	pause
	destroy
)

// due says what the reaper does to e: destroy it when its TTL has passed (pause
// it instead with OnTimeoutPause) or when no API call has been in progress or
// made for longer than its idle timeout; pause it after its idle pause. A paused
// environment is still destroyed by its idle timeout, and by its TTL unless
// OnTimeoutPause.
func (e *environment) due(now time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	idleFor := now.Sub(e.lastUsed)
	if e.inflight > 0 {
		idleFor = 0
	}
	switch {
	case e.idle > 0 && idleFor > e.idle:
		return destroy
	case !e.info.ExpiresAt.IsZero() && now.After(e.info.ExpiresAt):
		if e.info.OnTimeout != OnTimeoutPause {
			return destroy
		}
		if !e.paused {
			return pause
		}
	case e.idlePause > 0 && idleFor > e.idlePause && !e.paused:
		return pause
	}
	return keep
}

// teardown kills everything and removes what the environment holds on the
// host, once: new calls are refused, running commands end (their sandbox dies),
// file operations in progress finish first.
func (e *environment) teardown() error { return e.stop(false) }

// leave ends e as a crash of this process would (Config.KeepOnClose): its
// sandbox is left (sandbox.Sandbox.Leave: its upper layer and host ids kept),
// its directory with its record and its commands' spools kept, nothing more
// written to them, so that the next Manager restores it (Recover).
func (e *environment) leave() error { return e.stop(true) }

// restorable reports whether the next Manager can restore e if it is left: it
// has an owner and a kept sandbox, and is on no snapshot layers (see start).
func (e *environment) restorable() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.top != nil || e.info.Owner.Tenant == "" {
		return false
	}
	ns, ok := e.sb.(*sandbox.Sandbox) // a gVisor environment is never kept (see start)
	return ok && ns.Leftover() != (sandbox.Leftover{})
}

func (e *environment) stop(kept bool) error {
	e.teardownOnce.Do(func() {
		e.mu.Lock()
		e.destroyed = true
		procs := maps.Clone(e.procs)
		e.mu.Unlock()
		if kept {
			for _, p := range procs {
				p.leave() // before the sandbox ends their commands
			}
		}
		if e.cancel != nil {
			e.cancel()
		}
		var errs []error
		// The sandbox goes first: a command keeping the workspace busy ends now,
		// and with it any file operation waiting on it.
		sb := e.sandbox()
		end := sb.Destroy
		if ns, ok := sb.(*sandbox.Sandbox); kept && ok { // restorable: only a namespace sandbox is kept
			end = ns.Leave
		}
		if n, err := end(); err != nil && !errors.Is(err, sandbox.ErrDone) {
			errs = append(errs, err)
		} else if n != 0 {
			errs = append(errs, fmt.Errorf("%d processes survived", n))
		}
		if e.proxy != nil {
			e.proxy.Close() // after the sandbox: its last connections are logged
		}
		if e.img != nil {
			e.img.Close() // after the sandbox: its layers may go at the next GC
		}
		e.files.Lock()
		if e.root != nil {
			e.root.Close()
		}
		e.files.Unlock()
		e.bg.Wait()
		e.mu.Lock()
		for _, p := range e.procs {
			if kept {
				p.leave()
			} else {
				p.forget()
			}
		}
		e.mu.Unlock()
		if !kept {
			if err := os.RemoveAll(e.dir); err != nil {
				errs = append(errs, err)
			}
		}
		e.m.release(e.top) // after the sandbox: its layers may go now
		if err := errors.Join(errs...); err != nil {
			e.teardownErr = fmt.Errorf("environment %s: destroy: %w", e.id, err)
		}
	})
	return e.teardownErr
}
