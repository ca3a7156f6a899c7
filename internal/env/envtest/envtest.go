// Package envtest gives tests an in-process environment manager. It is a package
// of its own because package env's own tests use testenv, which must not import
// env.
package envtest

import (
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/testenv"
)

// New starts an environment manager (sandboxes need root: the test skips, or
// fails under CI=true, without it) on a fresh state directory; the test's cleanup
// closes it, destroying what is left.
func New(t testing.TB) *env.Manager {
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
