package env

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/runner"
)

// Config configures a Manager. The zero value of every field but StateDir is
// safe: defaults are filled in by NewManager.
type Config struct {
	// StateDir holds the Manager's lock, one directory per environment (command
	// outputs on their way to the artifact store) and, by default, the artifact
	// store. Required. A Manager locks it: two Managers cannot share one.
	StateDir string
	// ArtifactDir is the artifact store (StateDir/artifacts when empty). It
	// survives restarts, as environments do (see Manager.Recover).
	ArtifactDir string
	// Presets maps workspace preset names to host directories: the read-only lower
	// layer shared by every environment made from the workspace preset. They must not
	// change while environments use them.
	Presets map[string]string
	// Images is the image store that CreateOptions.Template names templates
	// in (nil: environments run on the host's system directories only).
	Images *image.Store

	// Isolation is the level of the environments whose CreateOptions leave it
	// empty: runner.IsolationNamespace (when empty) or runner.IsolationGvisor.
	Isolation runner.Isolation

	// Defaults fills in the zero fields of CreateOptions.Limits; where it is zero
	// too, memory and pids take the sandbox's defaults (sandbox.DefaultMemory,
	// sandbox.DefaultPids) and CPUs no quota.
	Defaults Limits
	// DefaultTTL and DefaultIdle apply when CreateOptions leaves TTL or Idle zero
	// (zero here: no limit).
	DefaultTTL, DefaultIdle time.Duration
	// DefaultIdlePause applies when CreateOptions leaves IdlePause zero (zero
	// here: never paused for idleness).
	DefaultIdlePause time.Duration
	// MaxEnvironments caps the live environments of this Manager, creates
	// under way included (0: no cap); Create fails with ErrQuota past it.
	// Per-tenant quotas are the API's.
	MaxEnvironments int

	// MaxReadBytes caps what one ReadFile or ReadArtifact returns (a bigger file
	// or range is a *workspace.TooLargeError: read a range). Default 8 MiB.
	MaxReadBytes int64
	// MaxFileBytes caps one file written, edited or uploaded, and a patch.
	// Default 64 MiB.
	MaxFileBytes int64
	// MaxArtifactBytes caps one exported file. Default 1 GiB.
	MaxArtifactBytes int64
	// ArtifactTTL is how long an artifact is kept after it was stored (or
	// stored again). Default 7 days.
	ArtifactTTL time.Duration
	// ArtifactStoreBytes bounds the artifact store: past it the oldest
	// artifacts, of any tenant, are removed. Default 8 GiB.
	ArtifactStoreBytes int64
	// ArtifactQuotas bound what each tenant keeps in the store; storing past
	// its quota is a *QuotaError (once expired artifacts are collected). A
	// tenant not named has only the store's bounds.
	ArtifactQuotas map[string]ArtifactQuota
	// SnapshotQuotas bound the bytes each tenant's snapshots hold: the used
	// space of their sealed layers (RAM for a memory layer, the host's disk for
	// a disk one), each counted once however many environments stand on it,
	// until the last of them is destroyed. A Snapshot (or a Fork that takes
	// one) past the quota fails with ErrQuota before anything changed. A tenant
	// not named has no such bound.
	SnapshotQuotas map[string]int64
	// ArtifactGCInterval is how often expired artifacts are collected.
	// Default 10 minutes.
	ArtifactGCInterval time.Duration
	// Now is the clock of artifact ages. Default time.Now.
	Now func() time.Time
	// MaxDiffBytes caps Diff's output. Default 64 MiB.
	MaxDiffBytes int64
	// AllowHardlinks lets file reads open files with several links. Sandboxed code
	// cannot create a link to a file outside its workspace, but the host
	// workspace or workspace preset may hold one (see workspace.Options).
	AllowHardlinks bool

	// KeepOnClose makes Close leave each environment a restart can restore (one
	// with a state record: not a pool member, not one on snapshot layers) as a
	// crash does, its sandbox ended but its files kept for the next Manager on
	// StateDir; it destroys the rest. False: Close destroys every environment.
	KeepOnClose bool

	// Restorable, if set, is asked by Recover whether a recorded environment
	// may still be restored with its options (its owner's tenant still
	// configured, its workspace still under the tenant's roots); one it refuses
	// is logged and left on disk, not restored.
	Restorable func(CreateOptions) error

	// Log hears of environments Recover restores, and of the state records it
	// refuses (nil: slog.Default()).
	Log *slog.Logger

	// KeepFinished is how many finished background commands an environment
	// remembers for Wait and Events. Default 32.
	KeepFinished int
	// KeepDestroyed is how many destroyed environment ids are remembered, so that
	// their owner gets ErrDestroyed rather than ErrNotFound. Default 10,000.
	KeepDestroyed int

	// EgressRoots verify the hosts an environment's proxy intercepts to inject a
	// secret (Network.Secrets); nil: the system's roots.
	EgressRoots *x509.CertPool

	// Pools keep environments started ahead of Create, one pool per shape (see
	// Pool); none by default. Their members count towards MaxEnvironments
	// (a create destroys one to make room) but belong to no tenant.
	Pools []Pool

	// ReapInterval is how often expired and idle environments are looked for.
	// Default 1 s.
	ReapInterval time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.StateDir == "" {
		return c, fmt.Errorf("%w: Config.StateDir is required", ErrInvalid)
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	var err error
	if c.StateDir, err = filepath.Abs(c.StateDir); err != nil {
		return c, err
	}
	if c.ArtifactDir == "" {
		c.ArtifactDir = filepath.Join(c.StateDir, "artifacts")
	}
	if c.ArtifactDir, err = filepath.Abs(c.ArtifactDir); err != nil {
		return c, err
	}
	presets := map[string]string{}
	for name, dir := range c.Presets {
		if name == "" {
			return c, fmt.Errorf("%w: a workspace preset has an empty name", ErrInvalid)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return c, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return c, fmt.Errorf("%w: workspace preset %q: %s is not a directory", ErrInvalid, name, abs)
		}
		presets[name] = abs
	}
	c.Presets = presets
	switch c.Isolation {
	case "", runner.IsolationNamespace, runner.IsolationGvisor:
	default:
		return c, fmt.Errorf("%w: Config.Isolation %q: namespace or gvisor", ErrInvalid, c.Isolation)
	}
	defaults := []struct {
		v *int64
		d int64
	}{
		{&c.MaxReadBytes, 8 << 20},
		{&c.MaxFileBytes, 64 << 20},
		{&c.MaxArtifactBytes, 1 << 30},
		{&c.ArtifactStoreBytes, 8 << 30},
		{&c.MaxDiffBytes, 64 << 20},
	}
	for _, d := range defaults {
		if *d.v <= 0 {
			*d.v = d.d
		}
	}
	c.MaxArtifactBytes = min(c.MaxArtifactBytes, c.ArtifactStoreBytes)
	if c.KeepFinished <= 0 {
		c.KeepFinished = 32
	}
	if c.KeepDestroyed <= 0 {
		c.KeepDestroyed = 10_000
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = time.Second
	}
	if c.ArtifactTTL <= 0 {
		c.ArtifactTTL = 7 * 24 * time.Hour
	}
	if c.ArtifactGCInterval <= 0 {
		c.ArtifactGCInterval = 10 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
