package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/model/modeltest"
)

// TestCoordBaseURLKeyTheft (attack: a caller of the sessions API points a
// session's model at its own server to be sent the coordinator's model key).
// The coordinator serves its operator's endpoint (--base-url); a spec naming
// any other is refused before anything is recorded, and the caller's server
// receives no request, so no key.
func TestCoordBaseURLKeyTheft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and a coordinator")
	}
	const key = "sk-ant-planted-0123456789abcdef"
	operator := modeltest.NewAnthropic(t, modeltest.Turn{Text: "stopping"})
	thief := modeltest.NewAnthropic(t, modeltest.Turn{Text: "thanks"})
	d := startDaemon(t, t.TempDir())
	ctx := context.Background()
	ws := coordWorkspace(t, d)
	c := startCoord(t, d, filepath.Join(t.TempDir(), "state"), "ANTHROPIC_API_KEY="+key, "--base-url="+operator.URL)
	for _, base := range []string{thief.URL, thief.URL + "/", operator.URL + "@" + strings.TrimPrefix(thief.URL, "http://")} {
		_, err := c.client().Create(ctx, coordinator.Spec{Goal: "look around", Env: coordinator.EnvSpec{Workspace: ws},
			Policy: coordinator.PolicySpec{Name: "anthropic", Model: "claude-test", BaseURL: base}})
		if err == nil || !strings.Contains(err.Error(), "base_url") || !strings.Contains(err.Error(), "--base-url") {
			t.Errorf("a session on base_url %s = %v, want refused naming base_url and --base-url", base, err)
		}
	}
	if n := len(thief.Received()); n != 0 {
		t.Errorf("the caller's server received %d requests (the key: %v)", n, thief.Received()[0].Header.Get("X-Api-Key") == key)
	}
	if l, err := c.client().List(ctx); err != nil || len(l) != 0 {
		t.Errorf("sessions after the refusals: %v, %v; want none", l, err)
	}
}
