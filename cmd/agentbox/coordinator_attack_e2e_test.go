package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
