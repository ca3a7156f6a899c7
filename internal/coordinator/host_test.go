package coordinator

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

const envToken = "env-token-0123456789abcdef"

// local is the one tenant of the hosts open makes.
const local = config.LocalCoordinatorTenant

// daemon serves an in-process environment manager over HTTP, as agentbox
// serve does, and returns its client and a workspace under its root.
func daemon(t *testing.T) (*client.Client, string) {
	t.Helper()
	root := t.TempDir()
	cs := serveDaemon(t, config.Local(envToken, root), envToken)
	return cs[0], workspaceIn(root)
}

// serveDaemon serves an in-process environment manager with cfg and returns
// a client of it for each token.
func serveDaemon(t *testing.T, cfg *config.Config, tokens ...string) []*client.Client {
	t.Helper()
	s, err := api.New(api.Options{Config: cfg, Service: envtest.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	var cs []*client.Client
	for _, tok := range tokens {
		c, err := client.New(client.Options{URL: ts.URL, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

// workspaceIn makes a workspace (a README) under root and returns it.
func workspaceIn(root string) string {
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "README"), []byte("hi\n"), 0o644)
	return ws
}

func open(t *testing.T, c *client.Client, state string) *Host {
	t.Helper()
	h, err := Open(Config{StateDir: state, Tenants: map[string]Tenant{local: {Env: c}}, Journal: journal.Options{NoSync: true},
		Policy: func(p PolicySpec) (agent.Policy, []string, error) { return &agent.Scripted{Mode: p.Mode}, nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func wait(t *testing.T, h *Host, tenant, id string, cond func(Info) bool) Info {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		i, err := h.Get(tenant, id)
		if err == nil && cond(i) {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: %+v %v", id, i, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHostRestart drives the Host in process (for the race detector): two
// sessions, one granted the ledger and one asked for it, with readers tailing
// and listing while they run; Close while one waits for its answer (fenced and
// let go, not ended); a second coordinator on the same state directory is
// refused while the first holds it; Open again resumes the waiting one, whose
// answer through the Host lets it finish with the other's workspace.
func TestHostRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("drives two long sessions in real environments")
	}
	c, ws := daemon(t)
	state := t.TempDir()
	h := open(t, c, state)
	if _, err := Open(Config{StateDir: state, Tenants: h.cfg.Tenants, Policy: h.cfg.Policy}); err == nil || !strings.Contains(err.Error(), "another coordinator") {
		t.Fatalf("a second coordinator on the state directory: %v", err)
	}
	spec := func(grants ...string) Spec {
		return Spec{Goal: "the long task", Policy: PolicySpec{Name: "scripted", Mode: agent.ModeLong}, Env: EnvSpec{Workspace: ws},
			Ledger: true, TestCommand: []string{"true"}, Grants: grants}
	}
	ref, err := h.Create(local, spec("tool:ledger.append"))
	if err != nil {
		t.Fatal(err)
	}
	asked, err := h.Create(local, spec())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	counts := make([]int64, 2)
	refTailed := make(chan struct{}) // the ended session's tail returns by itself
	for n, id := range []string{ref.ID, asked.ID} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n == 0 {
				defer close(refTailed)
			}
			h.Tail(ctx, local, id, 0, func(e trace.Event) error {
				if e.Seq != counts[n]+1 {
					t.Errorf("%s: event %d after %d", id, e.Seq, counts[n])
				}
				counts[n] = e.Seq
				return nil
			})
		}()
	}
	go func() {
		for ctx.Err() == nil {
			h.List(local)
		}
	}()
	want := wait(t, h, local, ref.ID, func(i Info) bool { return i.State == StateEnded })
	a := wait(t, h, local, asked.ID, func(i Info) bool { return len(i.Awaiting) == 1 })
	if want.StopReason != "done" {
		t.Fatalf("the granted session: %+v", want)
	}
	// Tail sends an ended session's events to its last and returns on its own;
	// cancelling first (as this test did) cut it short of its last poll.
	select {
	case <-refTailed:
	case <-time.After(time.Minute):
		t.Errorf("the tail of the ended session did not return by itself (at %d of %d)", counts[0], want.Seq)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	if counts[0] != want.Seq {
		t.Errorf("the tail of the ended session stopped at %d of %d", counts[0], want.Seq)
	}
	st, _ := journal.Open(filepath.Join(state, "sessions", asked.ID), journal.Options{})
	evs, _ := st.Events(0)
	st.Close()
	if last := evs[len(evs)-1]; last.Type == trace.SessionEnded || int64(len(evs)) != a.Seq {
		t.Fatalf("Close ended or changed the waiting session: %d events (was %d), the last %s", len(evs), a.Seq, last.Type)
	}

	h = open(t, c, state)
	defer h.Close()
	r := wait(t, h, local, asked.ID, func(i Info) bool { return i.Recoveries == 1 && len(i.Awaiting) == 1 })
	if _, err := h.Answer(local, asked.ID, r.Awaiting[0].Request.ID, true, "", "test"); err != nil {
		t.Fatal(err)
	}
	fin := wait(t, h, local, asked.ID, func(i Info) bool { return i.State == StateEnded })
	if fin.StopReason != "done" || fin.Diff != want.Diff || fin.EnvID != a.EnvID {
		t.Fatalf("after the restart: %s (%s), same diff %v, environment %s (was %s)", fin.StopReason, fin.Detail, fin.Diff == want.Diff, fin.EnvID, a.EnvID)
	}
	if i, _ := h.Get(local, ref.ID); i.State != StateEnded || i.Recoveries != 0 {
		t.Errorf("the ended session after the restart: %+v", i)
	}
}
