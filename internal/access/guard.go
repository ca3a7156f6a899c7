package access

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Guard is an env.Service that checks the caller (from the context, see
// WithCaller) before each call: its scope, its tenant's quotas and workspace roots,
// and the server's limits. It replaces the Owner argument of every method by the
// caller's, so no request can act for another tenant. HTTP handlers and MCP tools
// both call a Guard.
type Guard struct {
	svc env.Service
	cfg *config.Config
	rec Recorder

	mu      sync.Mutex
	tenants map[string]*creates // each tenant's creates under way
	seen    map[string]bool     // processes whose kill was counted
}

var _ env.Service = (*Guard)(nil)

// maxSeen bounds the set of processes whose kill was counted.
const maxSeen = 100_000

// Recorder counts what commands did, per tenant (the server's metrics).
type Recorder interface {
	// ObserveExec records a synchronous exec's wall time.
	ObserveExec(tenant string, d time.Duration)
	// ObserveEnd records how a command ended (once per command).
	ObserveEnd(tenant string, r *runner.Result)
}

type noRecorder struct{}

func (noRecorder) ObserveExec(string, time.Duration) {}
func (noRecorder) ObserveEnd(string, *runner.Result) {}

// NewGuard wraps svc; rec may be nil.
func NewGuard(svc env.Service, cfg *config.Config, rec Recorder) *Guard {
	if rec == nil {
		rec = noRecorder{}
	}
	return &Guard{svc: svc, cfg: cfg, rec: rec, tenants: map[string]*creates{}, seen: map[string]bool{}}
}

// owner returns the caller's owner if it holds every scope given.
func (g *Guard) owner(ctx context.Context, scopes ...string) (env.Owner, error) {
	c, ok := CallerFrom(ctx)
	if !ok || c.Tenant == "" {
		return env.Owner{}, ErrUnauthenticated
	}
	for _, s := range scopes {
		if !c.Has(s) {
			return env.Owner{}, &ScopeError{Scope: s}
		}
	}
	return env.Owner{Tenant: c.Tenant, Task: c.Task}, nil
}

// creates are a tenant's creates and forks under way, which its quotas count
// like its environments: they run concurrently (a cold create starts a sandbox,
// tens of milliseconds) and together cannot pass a quota.
type creates struct {
	// mu is held to count and reserve, and to release: an environment made
	// during a count is listed, reserved, or (for the instant between the two)
	// both, when a count that would refuse waits for the creates under way.
	mu    sync.Mutex
	ended sync.Cond // on mu: a create under way ended
	n     int
	mem   int64
}

func (g *Guard) createsOf(t string) *creates {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.tenants[t]
	if c == nil {
		c = &creates{}
		c.ended.L = &c.mu
		g.tenants[t] = c
	}
	return c
}

// reserve counts n more environments of limits l against the tenant's quotas
// and holds them as under way until release. Past a quota with creates under
// way, it waits for them to end and counts again: one that fails frees its
// share, and one that succeeds is counted once.
func (g *Guard) reserve(ctx context.Context, owner env.Owner, n int, l env.Limits) (release func(), err error) {
	q := g.cfg.Tenants[owner.Tenant].Quota
	if q.Environments <= 0 && q.Memory <= 0 {
		return func() {}, nil
	}
	c := g.createsOf(owner.Tenant)
	ask := int64(n) * (l.Memory + l.WorkspaceSize)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		err := g.withinQuota(ctx, owner, q, c.n, c.mem, n, l)
		switch {
		case err == nil:
			c.n += n
			c.mem += ask
			return func() {
				c.mu.Lock()
				c.n -= n
				c.mem -= ask
				c.mu.Unlock()
				c.ended.Broadcast()
			}, nil
		case !errors.Is(err, env.ErrQuota) || c.n == 0:
			return nil, err
		}
		c.ended.Wait()
	}
}

func (g *Guard) Create(ctx context.Context, o env.CreateOptions) (env.Info, error) {
	owner, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return env.Info{}, err
	}
	if owner.Task == "" {
		owner.Task = o.Owner.Task
	}
	o.Owner = owner
	if err := g.allowed(&o); err != nil {
		return env.Info{}, err
	}
	tenant := g.cfg.Tenants[owner.Tenant]
	if max := int64(g.cfg.Limits.MaxMemory); max > 0 && o.Limits.Memory > max {
		return env.Info{}, fmt.Errorf("%w: memory limit %d exceeds the server's maximum of %d bytes", env.ErrInvalid, o.Limits.Memory, max)
	}
	if o.Limits.Memory == 0 && (tenant.Quota.Memory > 0 || g.cfg.Limits.MaxMemory > 0) {
		o.Limits.Memory = int64(g.cfg.Limits.DefaultMemory)
	}
	if max := int64(g.cfg.Limits.MaxWorkspace); o.Limits.WorkspaceSize > max {
		return env.Info{}, fmt.Errorf("%w: workspace size %d exceeds the server's maximum of %d bytes", env.ErrInvalid, o.Limits.WorkspaceSize, max)
	}
	if o.Limits.WorkspaceSize == 0 {
		o.Limits.WorkspaceSize = int64(g.cfg.Limits.DefaultWorkspace)
	}
	if max := time.Duration(g.cfg.Limits.MaxTTL); max > 0 && (o.TTL == 0 || o.TTL > max) {
		o.TTL = max
	}
	release, err := g.reserve(ctx, owner, 1, o.Limits)
	if err != nil {
		return env.Info{}, err
	}
	defer release()
	return g.svc.Create(ctx, o)
}

// allowed checks what of o its owner's tenant configuration bounds: the
// network, the workspace and mount sources (resolved in o), the template.
func (g *Guard) allowed(o *env.CreateOptions) error {
	name := o.Owner.Tenant
	if err := g.withinBound(name, o.Network); err != nil {
		return err
	}
	tenant := g.cfg.Tenants[name]
	var err error
	if o.Workspace != "" {
		if o.Workspace, err = allowedWorkspace(o.Workspace, name, tenant.WorkspaceRoots); err != nil {
			return err
		}
	}
	if o.Template != "" && !tenant.Templates.MayUse(o.Template) {
		// As env says of a template that does not exist: whether another
		// tenant's does is not this one's to learn.
		return fmt.Errorf("%w: no template %q (agentbox template ls lists them)", env.ErrInvalid, o.Template)
	}
	ms := slices.Clone(o.Mounts)
	for i, m := range ms {
		if ms[i].Source, err = allowedMount(m.Source, name, tenant.MountRoots); err != nil {
			return err
		}
	}
	o.Mounts = ms
	return nil
}

// Restorable is env.Config.Restorable for cfg: an environment a restarted
// daemon finds on disk is restored only if its tenant is still configured and
// the tenant's configuration would allow its create now (workspace and mount
// sources under the tenant's current roots, its template, its network), so that
// a root or a tenant removed from the configuration takes its environments with
// it at the next start.
func Restorable(cfg *config.Config) func(env.CreateOptions) error {
	g := &Guard{cfg: cfg}
	return func(o env.CreateOptions) error {
		if _, ok := cfg.Tenants[o.Owner.Tenant]; !ok {
			return fmt.Errorf("%w: tenant %q is no longer configured", ErrForbidden, o.Owner.Tenant)
		}
		return g.allowed(&o)
	}
}

// withinQuota checks that n more environments of limits l fit in the
// tenant's quotas q beside its environments and busy (busyMem bytes) more
// under way; the caller holds the tenant's creates.
func (g *Guard) withinQuota(ctx context.Context, owner env.Owner, q config.Quota, busy int, busyMem int64, n int, l env.Limits) error {
	envs, err := g.svc.List(ctx, owner, nil)
	if err != nil {
		return err
	}
	// An environment's RAM is its memory limit and its upper layer (a tmpfs
	// that the API's writes fill on the daemon's account).
	mem, have := busyMem, busy
	for _, e := range envs {
		if e.State == "destroyed" {
			continue
		}
		have++
		mem += e.Limits.Memory + e.Limits.WorkspaceSize
	}
	if q.Environments > 0 && have+n > q.Environments {
		return fmt.Errorf("%w: tenant has %d of %d environments, %d more asked", env.ErrQuota, have, q.Environments, n)
	}
	if ask := int64(n) * (l.Memory + l.WorkspaceSize); q.Memory > 0 && mem+ask > int64(q.Memory) {
		return fmt.Errorf("%w: %d bytes of memory and workspace in use, %d more asked (%d × memory %d + workspace %d), quota %d",
			env.ErrQuota, mem, ask, n, l.Memory, l.WorkspaceSize, int64(q.Memory))
	}
	return nil
}

// Snapshot is a lifecycle operation, of the scope that creates and destroys.
func (g *Guard) Snapshot(ctx context.Context, _ env.Owner, id string) (env.Snapshot, error) {
	o, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return env.Snapshot{}, err
	}
	return g.svc.Snapshot(ctx, o, id)
}

// Fork creates environments: the tenant's quotas count every one of them,
// each with the source's limits, before any is made.
func (g *Guard) Fork(ctx context.Context, _ env.Owner, id string, fo env.ForkOptions) ([]env.Info, error) {
	o, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return nil, err
	}
	src, err := g.svc.Get(ctx, o, id)
	if err != nil {
		return nil, err
	}
	if fo.Count >= 1 && fo.Count <= env.MaxFork { // otherwise env says what is wrong
		release, err := g.reserve(ctx, o, fo.Count, src.Limits)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return g.svc.Fork(ctx, o, id, fo)
}

// allowedMount checks that a mount's source lies under one of the tenant's
// mount_roots. The source must be a clean absolute path that names its directory
// through no symlink (the sandbox refuses one with a symlink on the way), so the
// check is on the path as given.
func allowedMount(src, tenant string, roots []string) (string, error) {
	if !filepath.IsAbs(src) || filepath.Clean(src) != src {
		return "", fmt.Errorf("%w: mount source %q: give a clean absolute path", env.ErrInvalid, src)
	}
	for _, r := range roots {
		if src == r || strings.HasPrefix(src, r+"/") {
			return src, nil
		}
	}
	return "", fmt.Errorf("%w: mount source %q is not under a directory tenant %q may mount (config key tenants.%s.mount_roots)", ErrOutsideRoots, src, tenant, tenant)
}

// allowedWorkspace resolves dir (following symlinks, so a link cannot lead out of a
// root) and checks that it lies under one of roots.
func allowedWorkspace(dir, tenant string, roots []string) (string, error) {
	refuse := fmt.Errorf("%w: workspace %q is not under a directory tenant %q may use (config key tenants.%s.workspace_roots)", ErrOutsideRoots, dir, tenant, tenant)
	if !filepath.IsAbs(dir) || len(roots) == 0 {
		return "", refuse
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return "", refuse // do not tell a missing directory from a forbidden one
	}
	for _, r := range roots {
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if real == rr || strings.HasPrefix(real, rr+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", refuse
}

func (g *Guard) Get(ctx context.Context, _ env.Owner, id string) (env.Info, error) {
	o, err := g.owner(ctx)
	if err != nil {
		return env.Info{}, err
	}
	return g.svc.Get(ctx, o, id)
}

func (g *Guard) List(ctx context.Context, _ env.Owner, labels map[string]string) ([]env.Info, error) {
	o, err := g.owner(ctx)
	if err != nil {
		return nil, err
	}
	return g.svc.List(ctx, o, labels)
}

// Pause and Resume are lifecycle operations, of the scope that creates and destroys.
func (g *Guard) Pause(ctx context.Context, _ env.Owner, id string, po env.PauseOptions) (env.Info, error) {
	o, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return env.Info{}, err
	}
	return g.svc.Pause(ctx, o, id, po)
}

func (g *Guard) Resume(ctx context.Context, _ env.Owner, id string) (env.Info, error) {
	o, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return env.Info{}, err
	}
	return g.svc.Resume(ctx, o, id)
}

func (g *Guard) Destroy(ctx context.Context, _ env.Owner, id string) error {
	o, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return err
	}
	// Destroy is idempotent, and a foreign id must answer like a missing one: both
	// succeed (204), so a DELETE cannot tell whether another tenant's id exists.
	if err := g.svc.Destroy(ctx, o, id); err != nil && !errors.Is(err, env.ErrNotFound) {
		return err
	}
	g.mu.Lock()
	for k := range g.seen {
		if strings.HasPrefix(k, id+"/") {
			delete(g.seen, k)
		}
	}
	g.mu.Unlock()
	return nil
}

// output caps what a command may produce: output_total is kept whole on the
// daemon's disk, output_limit of each stream in its memory.
func (g *Guard) output(r *env.ExecRequest) error {
	maxTotal, maxLimit := int64(g.cfg.Limits.MaxOutputTotal), int64(g.cfg.Limits.MaxOutputLimit)
	if r.OutputTotal > maxTotal {
		return fmt.Errorf("%w: output_total %d exceeds the server's maximum of %d bytes", env.ErrInvalid, r.OutputTotal, maxTotal)
	}
	if r.OutputLimit > maxLimit {
		return fmt.Errorf("%w: output_limit %d exceeds the server's maximum of %d bytes", env.ErrInvalid, r.OutputLimit, maxLimit)
	}
	if r.OutputTotal == 0 {
		r.OutputTotal = min(runner.DefaultOutputTotal, maxTotal)
	}
	if r.OutputLimit == 0 {
		r.OutputLimit = min(runner.DefaultOutputLimit, maxLimit, r.OutputTotal)
	}
	return nil
}

func (g *Guard) Exec(ctx context.Context, _ env.Owner, id string, r env.ExecRequest) (*runner.Result, error) {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return nil, err
	}
	if err := g.output(&r); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := g.svc.Exec(ctx, o, id, r)
	if err == nil {
		g.rec.ObserveExec(o.Tenant, time.Since(start))
		g.rec.ObserveEnd(o.Tenant, res)
	}
	return res, err
}

func (g *Guard) Start(ctx context.Context, _ env.Owner, id string, r env.ExecRequest) (string, error) {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return "", err
	}
	if err := g.output(&r); err != nil {
		return "", err
	}
	return g.svc.Start(ctx, o, id, r)
}

func (g *Guard) Wait(ctx context.Context, _ env.Owner, id, procID string) (*runner.Result, error) {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return nil, err
	}
	res, err := g.svc.Wait(ctx, o, id, procID)
	if err == nil {
		g.mu.Lock()
		first := !g.seen[id+"/"+procID]
		if len(g.seen) >= maxSeen {
			clear(g.seen) // environments that expired were never destroyed here
		}
		g.seen[id+"/"+procID] = true
		g.mu.Unlock()
		if first {
			g.rec.ObserveEnd(o.Tenant, res)
		}
	}
	return res, err
}

func (g *Guard) Events(ctx context.Context, _ env.Owner, id, procID string, after int64) (<-chan env.Event, error) {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return nil, err
	}
	return g.svc.Events(ctx, o, id, procID, after)
}

func (g *Guard) WriteStdin(ctx context.Context, _ env.Owner, id, procID string, data []byte, eof bool) error {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return err
	}
	return g.svc.WriteStdin(ctx, o, id, procID, data, eof)
}

func (g *Guard) Signal(ctx context.Context, _ env.Owner, id, procID string, sig string) error {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return err
	}
	return g.svc.Signal(ctx, o, id, procID, sig)
}

func (g *Guard) Resize(ctx context.Context, _ env.Owner, id, procID string, size runner.TTY) error {
	o, err := g.owner(ctx, config.ScopeExec)
	if err != nil {
		return err
	}
	return g.svc.Resize(ctx, o, id, procID, size)
}

func (g *Guard) ReadFile(ctx context.Context, _ env.Owner, id, path string, offset, length int64) ([]byte, error) {
	o, err := g.owner(ctx, config.ScopeFileRead)
	if err != nil {
		return nil, err
	}
	return g.svc.ReadFile(ctx, o, id, path, offset, length)
}

func (g *Guard) WriteFile(ctx context.Context, _ env.Owner, id, path string, data []byte) error {
	o, err := g.owner(ctx, config.ScopeFileWrite)
	if err != nil {
		return err
	}
	return g.svc.WriteFile(ctx, o, id, path, data)
}

func (g *Guard) ListDir(ctx context.Context, _ env.Owner, id, path string) ([]workspace.Entry, error) {
	o, err := g.owner(ctx, config.ScopeFileRead)
	if err != nil {
		return nil, err
	}
	return g.svc.ListDir(ctx, o, id, path)
}

func (g *Guard) Stat(ctx context.Context, _ env.Owner, id, path string) (workspace.Entry, error) {
	o, err := g.owner(ctx, config.ScopeFileRead)
	if err != nil {
		return workspace.Entry{}, err
	}
	return g.svc.Stat(ctx, o, id, path)
}

func (g *Guard) Remove(ctx context.Context, _ env.Owner, id, path string) error {
	o, err := g.owner(ctx, config.ScopeFileWrite)
	if err != nil {
		return err
	}
	return g.svc.Remove(ctx, o, id, path)
}

func (g *Guard) Mkdir(ctx context.Context, _ env.Owner, id, path string) error {
	o, err := g.owner(ctx, config.ScopeFileWrite)
	if err != nil {
		return err
	}
	return g.svc.Mkdir(ctx, o, id, path)
}

func (g *Guard) Download(ctx context.Context, _ env.Owner, id, path string, w io.Writer) error {
	o, err := g.owner(ctx, config.ScopeFileRead)
	if err != nil {
		return err
	}
	return g.svc.Download(ctx, o, id, path, w)
}

func (g *Guard) Upload(ctx context.Context, _ env.Owner, id, path string, r io.Reader) error {
	o, err := g.owner(ctx, config.ScopeFileWrite)
	if err != nil {
		return err
	}
	return g.svc.Upload(ctx, o, id, path, r)
}

func (g *Guard) ApplyPatch(ctx context.Context, _ env.Owner, id string, patch []byte) (workspace.PatchReport, error) {
	o, err := g.owner(ctx, config.ScopeFileWrite)
	if err != nil {
		return workspace.PatchReport{}, err
	}
	return g.svc.ApplyPatch(ctx, o, id, patch)
}

func (g *Guard) StrReplace(ctx context.Context, _ env.Owner, id, path, old, new string) error {
	o, err := g.owner(ctx, config.ScopeFileWrite)
	if err != nil {
		return err
	}
	return g.svc.StrReplace(ctx, o, id, path, old, new)
}

func (g *Guard) Diff(ctx context.Context, _ env.Owner, id string) ([]byte, error) {
	o, err := g.owner(ctx, config.ScopeFileRead)
	if err != nil {
		return nil, err
	}
	return g.svc.Diff(ctx, o, id)
}

func (g *Guard) Export(ctx context.Context, _ env.Owner, id, path string) (env.Artifact, error) {
	o, err := g.owner(ctx, config.ScopeFileRead)
	if err != nil {
		return env.Artifact{}, err
	}
	return g.svc.Export(ctx, o, id, path)
}

func (g *Guard) ReadArtifact(ctx context.Context, _ env.Owner, ref string, offset, length int64) ([]byte, env.Artifact, error) {
	o, err := g.owner(ctx, config.ScopeArtifactRead)
	if err != nil {
		return nil, env.Artifact{}, err
	}
	return g.svc.ReadArtifact(ctx, o, ref, offset, length)
}
