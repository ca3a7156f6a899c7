package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
)

// TestEnvConfigLimits: the daemon's limits.max_environments and
// limits.idle_pause reach the environment manager.
func TestEnvConfigLimits(t *testing.T) {
	cfg, err := config.Parse([]byte(fmt.Sprintf(api.TestConfig, t.TempDir())), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limits.MaxEnvironments, cfg.Limits.IdlePause = 7, config.Duration(10*time.Minute)
	if ec := api.EnvConfig(cfg); ec.MaxEnvironments != 7 || ec.DefaultIdlePause != 10*time.Minute {
		t.Fatalf("env config: max environments %d, idle pause %v", ec.MaxEnvironments, ec.DefaultIdlePause)
	}
}

// TestEnvConfigRestorable: a restarted daemon restores only the environments
// its tenants' configuration allows now (access.Restorable reaches the
// environment manager): one of a tenant no longer configured is refused.
func TestEnvConfigRestorable(t *testing.T) {
	cfg, err := config.Parse([]byte(fmt.Sprintf(api.TestConfig, t.TempDir())), "")
	if err != nil {
		t.Fatal(err)
	}
	ok := api.EnvConfig(cfg).Restorable
	if ok == nil {
		t.Fatal("EnvConfig sets no Restorable: a restart would restore every recorded environment")
	}
	if err := ok(env.CreateOptions{Owner: env.Owner{Tenant: "no-such-tenant"}}); err == nil {
		t.Error("an environment of a tenant not configured is restorable")
	}
}

// TestEnvConfigSnapshotQuota: a tenant's quota.snapshot_bytes reaches the
// environment manager, and a tenant without one has no bound.
func TestEnvConfigSnapshotQuota(t *testing.T) {
	cfg, err := config.Parse([]byte(fmt.Sprintf(api.TestConfig, t.TempDir())), "")
	if err != nil {
		t.Fatal(err)
	}
	var named string
	for name, tc := range cfg.Tenants {
		tc.Quota.SnapshotBytes = 5 << 20
		cfg.Tenants[name] = tc
		named = name
		break
	}
	if named == "" {
		t.Fatal("the test config has no tenant")
	}
	ec := api.EnvConfig(cfg)
	if ec.SnapshotQuotas[named] != 5<<20 || len(ec.SnapshotQuotas) != 1 {
		t.Fatalf("snapshot quotas %v, want only %s: 5 MiB", ec.SnapshotQuotas, named)
	}
}
