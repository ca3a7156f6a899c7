package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
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
