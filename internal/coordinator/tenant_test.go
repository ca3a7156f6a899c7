package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/journal"
)

// tenantDaemon serves an environment manager to two daemon tenants, alice
// and bob, each with its own token and workspace root; it returns their
// clients and a workspace under each root.
func tenantDaemon(t *testing.T) (ca, cb *client.Client, wsA, wsB string) {
	t.Helper()
	roots := [2]string{t.TempDir(), t.TempDir()}
	cfg, err := config.Parse([]byte(fmt.Sprintf(`state_dir: %s
tenants:
  alice: {workspace_roots: [%s]}
  bob: {workspace_roots: [%s]}
tokens:
  - {name: alice, token: alice-env-0123456789ab, tenant: alice, scopes: [admin]}
  - {name: bob, token: bob-env-0123456789abcd, tenant: bob, scopes: [admin]}
`, t.TempDir(), roots[0], roots[1])), "")
	if err != nil {
		t.Fatal(err)
	}
	cs := serveDaemon(t, cfg, "alice-env-0123456789ab", "bob-env-0123456789abcd")
	return cs[0], cs[1], workspaceIn(roots[0]), workspaceIn(roots[1])
}

// logs collects a Host's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestTenantEnvironments (attack: tenant bob's session works in tenant
// alice's environment or workspace through the coordinator's credential).
// Each tenant's sessions reach the daemon with the tenant's own daemon token:
// bob's session naming alice's environment finds none there and fails
// without touching it, one naming alice's workspace is refused by the daemon's
// workspace_roots for bob; alice's session in her environment runs. At a
// restart without tenant alice, her session is neither found nor resumed, its
// journal is left on disk and the log says why; a restart with her again
// finds it as it was.
func TestTenantEnvironments(t *testing.T) {
	if testing.Short() {
		t.Skip("drives sessions in real environments")
	}
	ctx := context.Background()
	ca, cb, wsA, _ := tenantDaemon(t)
	ea, err := ca.Create(ctx, client.CreateRequest{Workspace: wsA})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var log logs
	openWith := func(tenants map[string]Tenant) *Host {
		h, err := Open(Config{StateDir: state, Tenants: tenants, Journal: journal.Options{NoSync: true}, Logf: log.logf,
			Policy: func(p PolicySpec) (agent.Policy, []string, error) { return &agent.Scripted{Mode: p.Mode}, nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	both := map[string]Tenant{"alice": {Env: ca}, "bob": {Env: cb}}
	h := openWith(both)
	spec := func(e EnvSpec) Spec {
		return Spec{Goal: "fix it", Policy: PolicySpec{Name: "scripted", Mode: agent.ModeGood}, Env: e, TestCommand: []string{"true"}}
	}
	mine, err := h.Create("alice", spec(EnvSpec{ID: ea.ID}))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := h.Create("bob", spec(EnvSpec{ID: ea.ID}))
	if err != nil {
		t.Fatal(err)
	}
	rooted, err := h.Create("bob", spec(EnvSpec{Workspace: wsA}))
	if err != nil {
		t.Fatal(err)
	}
	done := wait(t, h, "alice", mine.ID, func(i Info) bool { return i.State == StateEnded })
	if done.EnvID != ea.ID || done.ToolCalls == 0 { // the script's first call reached the environment
		t.Fatalf("alice's session in her environment: %+v", done)
	}
	for _, id := range []string{theirs.ID, rooted.ID} {
		i := wait(t, h, "bob", id, func(i Info) bool { return i.State == StateFailed })
		if i.Seq != 0 || i.EnvID != "" {
			t.Errorf("bob's session %s got as far as %d events in environment %q: %+v", id, i.Seq, i.EnvID, i)
		}
	}
	if i, _ := h.Get("bob", theirs.ID); !strings.Contains(i.Error, ea.ID) || !strings.Contains(i.Error, "not found") {
		t.Errorf("bob's session on alice's environment: error %q, want the daemon's not found", i.Error)
	}
	if i, _ := h.Get("bob", rooted.ID); !strings.Contains(i.Error, "workspace_roots") {
		t.Errorf("bob's session on alice's workspace: error %q, want the daemon's workspace_roots refusal", i.Error)
	}
	if envs, err := cb.List(ctx, nil); err != nil || len(envs) != 0 {
		t.Errorf("bob's environments: %+v, %v; want none", envs, err)
	}
	if e, err := ca.Get(ctx, ea.ID); err != nil || e.State != "running" {
		t.Errorf("alice's environment after the sessions: %+v, %v", e, err)
	}
	if _, err := h.Get("bob", mine.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob reading alice's session: %v, want ErrNotFound", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h = openWith(map[string]Tenant{"bob": {Env: cb}})
	if l, _ := h.List("bob"); len(l) != 2 {
		t.Errorf("bob's sessions after a restart without alice: %+v", l)
	}
	if _, err := h.Get("alice", mine.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice's session with alice not configured: %v, want ErrNotFound", err)
	}
	if !strings.Contains(log.String(), mine.ID) || !strings.Contains(log.String(), `tenant "alice", which is not configured`) {
		t.Errorf("the log does not say why alice's session is left:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(state, "sessions", mine.ID)); err != nil {
		t.Errorf("alice's session's journal: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openWith(both)
	defer h.Close()
	if i, err := h.Get("alice", mine.ID); err != nil || i.State != StateEnded || i.Seq != done.Seq {
		t.Errorf("alice's session with alice configured again: %+v, %v", i, err)
	}
}

// TestSessionBeforeTenants: a session a coordinator recorded before it had
// tenants (no tenant in its journal) is the local tenant's, the one tenant of
// a coordinator given --token-file: found by it, by no other.
func TestSessionBeforeTenants(t *testing.T) {
	state := t.TempDir()
	id := agent.NewSessionID()
	st, err := journal.Open(filepath.Join(state, "sessions", id), journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetMeta("spec", Spec{Goal: "old", Policy: PolicySpec{Name: "scripted", Mode: agent.ModeGood}, Env: EnvSpec{Workspace: "/w"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ec, err := client.New(client.Options{URL: "http://127.0.0.1:1", Token: "env-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(Config{StateDir: state, Tenants: map[string]Tenant{local: {Env: ec}, "other": {Env: ec}},
		Policy: func(p PolicySpec) (agent.Policy, []string, error) { return &agent.Scripted{Mode: p.Mode}, nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if i, err := h.Get(local, id); err != nil || i.Goal != "old" {
		t.Errorf("the local tenant's view of the old session: %+v, %v", i, err)
	}
	if _, err := h.Get("other", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("another tenant's view of the old session: %v, want ErrNotFound", err)
	}
}
