package agent

import (
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/testenv"
)

// newTestEnv starts an in-process environment manager (sandboxes need root) on a
// fresh state directory; the test's cleanup closes it, destroying what is left.
func newTestEnv(t *testing.T) env.Service {
	t.Helper()
	testenv.RequireRoot(t)
	m, err := env.NewManager(env.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatalf("env.NewManager: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close the environment manager: %v", err)
		}
	})
	return m
}
