package api

import (
	"time"

	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
)

// EnvConfig is the environment manager's share of the daemon's configuration:
// where state lives, the presets, the warm pools, the bound on environments, the
// default idle pause, the artifact store's bounds (package env
// enforces the artifact and snapshot quotas: only it can count them), and which
// recorded environments a restart may restore (access.Restorable: those the
// tenants' configuration still allows).
func EnvConfig(cfg *config.Config) env.Config {
	quotas := map[string]env.ArtifactQuota{}
	snaps := map[string]int64{}
	for name, t := range cfg.Tenants {
		if q := t.Quota; q.ArtifactBytes > 0 || q.Artifacts > 0 {
			quotas[name] = env.ArtifactQuota{Bytes: int64(q.ArtifactBytes), Count: q.Artifacts}
		}
		if q := t.Quota.SnapshotBytes; q > 0 {
			snaps[name] = int64(q)
		}
	}
	var pools []env.Pool
	for _, p := range cfg.Pools {
		pools = append(pools, env.Pool{Template: p.Template, Preset: p.Preset, Workspace: p.Workspace,
			Limits:  env.Limits{Memory: int64(p.Memory), Pids: p.Pids, CPUs: p.CPUs, WorkspaceSize: int64(p.WorkspaceBytes)},
			Network: p.Network, TTL: time.Duration(p.TTL), Min: p.Min, Max: p.Max, Idle: time.Duration(p.Idle)})
	}
	return env.Config{StateDir: cfg.StateDir, Presets: cfg.WorkspacePresets, Pools: pools,
		Restorable:         access.Restorable(cfg),
		MaxEnvironments:    cfg.Limits.MaxEnvironments,
		DefaultIdlePause:   time.Duration(cfg.Limits.IdlePause),
		ArtifactTTL:        time.Duration(cfg.Artifacts.TTL),
		ArtifactStoreBytes: int64(cfg.Artifacts.MaxBytes),
		ArtifactGCInterval: time.Duration(cfg.Artifacts.GCInterval),
		ArtifactQuotas:     quotas,
		SnapshotQuotas:     snaps}
}
