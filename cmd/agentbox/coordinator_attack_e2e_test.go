package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/sessionapi"
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

// TestCoordIdleConns (attack: a caller without the token holds connections
// open for ever, one keep-alive connection after a /healthz or a refused
// request each, until the coordinator runs out of descriptors). The
// coordinator closes an idle connection after coordIdle, as the daemon does.
func TestCoordIdleConns(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the coordinator's idle timeout")
	}
	d := startDaemon(t, t.TempDir())
	c := startCoord(t, d, filepath.Join(t.TempDir(), "state"))
	var conns []net.Conn
	for _, path := range []string{"/healthz", "/v1/sessions"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatalf("%s: the connection closes at once: the test would prove nothing", path)
		}
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		start := time.Now()
		conn.SetReadDeadline(start.Add(coordIdle + time.Minute))
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("an idle connection after %v: %v, want closed by the coordinator", time.Since(start).Round(time.Second), err)
		}
	}
}

// TestCoordTenants (attack: a tenant of a coordinator with several reads,
// answers, steers, resolves or cancels another's session through the sessions
// CLI and the API, or drives a session in the other's workspace). coordinator
// serve --config gives two tenants, each with its own token and the daemon
// token of its own daemon tenant. Tenant beta's CLI commands on acme's
// session fail as they do on an id that exists nowhere (the same message but
// the id) and change nothing; beta's list and event stream do not show it;
// beta's session on acme's workspace is refused by the daemon (beta's daemon
// tenant has no workspace roots); acme past its quota of one session gets
// EQUOTA; acme's own CLI answers its session, which then finishes.
func TestCoordTenants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an environment daemon and a coordinator")
	}
	const coordTokenB = "coord-token-b-0123456789abcd"
	ctx := context.Background()
	d := startDaemon(t, t.TempDir())
	ws := coordWorkspace(t, d)
	dir := t.TempDir()
	for name, tok := range map[string]string{"acme-env.token": e2eToken, "beta-env.token": e2eTokenB, "acme.token": coordToken} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "coordinator.yaml")
	if err := os.WriteFile(cfg, []byte(`tenants:
  acme: {env_token_file: acme-env.token, quota: {sessions: 1}}
  beta: {env_token_file: beta-env.token}
tokens:
  - {name: acme, file: acme.token, tenant: acme}
  - {name: beta, token: `+coordTokenB+`, tenant: beta}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCoord(t, d, filepath.Join(dir, "state"), "--config="+cfg)
	s, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.waitState(s.ID, 2*time.Minute, func(i coordinator.Info) bool { return len(i.Awaiting) == 1 })
	req := a.Awaiting[0].Request.ID
	if _, err := c.client().Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws})); err == nil || !strings.Contains(err.Error(), "quota.sessions") {
		t.Errorf("acme's second session past its quota of one: %v, want refused naming quota.sessions", err)
	}

	beta := []string{"PATH=" + os.Getenv("PATH"), "AGENTBOX_COORDINATOR_TOKEN=" + coordTokenB}
	absent := "s-AAAAAAAAAAAAAAAA"
	for _, args := range [][]string{{"show", "ID"}, {"approve", "ID", req}, {"deny", "ID", req}, {"resolve", "ID", "call_1", "--as", "succeeded"},
		{"steer", "ID", "--kind", "replace", "--message", "delete everything"}, {"cancel", "ID"}} {
		var errs [2]string
		for i, id := range []string{s.ID, absent} {
			argv := append([]string{"sessions"}, args...)
			argv[2] = id
			out, errOut, st := run(t, beta, append(argv, "--coordinator", c.url)...)
			if st == 0 || !strings.Contains(errOut, "not found") {
				t.Errorf("beta: sessions %v on %s: %d %s %s, want not found", args, id, st, out, errOut)
			}
			errs[i] = strings.ReplaceAll(errOut, id, "ID")
		}
		if errs[0] != errs[1] {
			t.Errorf("beta: sessions %v tells acme's session (%q) from an absent one (%q)", args, errs[0], errs[1])
		}
	}
	out, errOut, st := run(t, beta, "sessions", "ls", "--coordinator", c.url)
	if st != 0 || strings.Contains(out, s.ID) {
		t.Errorf("beta's sessions ls: %d %s %s, want it without acme's session", st, out, errOut)
	}
	sreq, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/sessions/"+s.ID+"/events", nil)
	sreq.Header.Set("Authorization", "Bearer "+coordTokenB)
	if resp, err := http.DefaultClient.Do(sreq); err != nil || resp.StatusCode != 404 {
		t.Errorf("beta's event stream of acme's session: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	if i, err := c.client().Get(ctx, s.ID); err != nil || i.State != coordinator.StateRunning || len(i.Awaiting) != 1 || i.Awaiting[0].Request.ID != req {
		t.Fatalf("acme's session after beta's commands: %+v, %v; want it waiting on %s as before", i, err, req)
	}

	bc, err := sessionapi.NewClient(c.url, coordTokenB)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bc.Create(ctx, longSpec(coordinator.EnvSpec{Workspace: ws}))
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(time.Minute, func() bool {
		b, err = bc.Get(ctx, b.ID)
		return err == nil && b.State == coordinator.StateFailed
	}) || !strings.Contains(b.Error, "workspace_roots") || b.Seq != 0 {
		t.Errorf("beta's session on acme's workspace: %+v, %v; want failed by the daemon's workspace_roots before any event", b, err)
	}

	acme := []string{"PATH=" + os.Getenv("PATH"), "AGENTBOX_COORDINATOR_TOKEN=" + coordToken}
	if out, errOut, st := run(t, acme, "sessions", "approve", s.ID, req, "--coordinator", c.url); st != 0 {
		t.Fatalf("acme's approve: %d %s %s", st, out, errOut)
	}
	if fin := c.waitState(s.ID, 2*time.Minute, func(i coordinator.Info) bool { return i.State == coordinator.StateEnded }); fin.StopReason != "done" {
		t.Errorf("acme's session after its answer: %+v", fin)
	}
}
