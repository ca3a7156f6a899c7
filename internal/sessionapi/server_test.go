package sessionapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/coordinator"
)

// The tokens of the two tenants of newServer's coordinator.
const (
	token  = "test-token-0123456789abcdef"
	tokenB = "bob-token-0123456789abcdefg"
)

// newServer serves a Host with two tenants, alice (token; alice is more of
// her configuration, as YAML: a quota, a rate) and bob (tokenB), whose
// environment daemon is not there: requests are checked before anything
// reaches it. The tenants and tokens are read from a coordinator configuration
// file, as coordinator serve --config reads them.
func newServer(t *testing.T, alice string) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	for name, tok := range map[string]string{"alice-env.token": "abx_alice_env_0123456789", "bob-env.token": "abx_bob_env_0123456789ab"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yml := fmt.Sprintf(`tenants:
  alice: {env_token_file: alice-env.token, %s}
  bob: {env_token_file: bob-env.token}
tokens:
  - {name: alice, token: %s, tenant: alice}
  - {name: bob, sha256: %x, tenant: bob}
`, alice, token, sha256.Sum256([]byte(tokenB)))
	if err := os.WriteFile(filepath.Join(dir, "coordinator.yaml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cc, err := config.LoadCoordinator(filepath.Join(dir, "coordinator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]coordinator.Tenant{}
	for name, tc := range cc.Tenants {
		ec, err := client.New(client.Options{URL: "http://127.0.0.1:1", Token: tc.EnvToken})
		if err != nil {
			t.Fatal(err)
		}
		tenants[name] = coordinator.Tenant{Env: ec, Sessions: tc.Quota.Sessions}
	}
	h, err := coordinator.Open(coordinator.Config{StateDir: t.TempDir(), Tenants: tenants,
		Policy: func(p coordinator.PolicySpec) (agent.Policy, []string, error) {
			if p.Name != "scripted" || p.Mode != "good" {
				return nil, nil, errors.New(`use scripted with mode good`)
			}
			return &agent.Scripted{Mode: p.Mode}, nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(New(h, access.NewTokenAuth(cc.Tokens, cc.Rates())))
	t.Cleanup(func() {
		ts.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

func do(t *testing.T, ts *httptest.Server, method, path, auth, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, ts.URL+path, r)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAuth is the attacker's test of the API's one boundary: every route but
// /healthz refuses a request without the exact token, before it reads the
// body or looks the session up.
func TestAuth(t *testing.T) {
	ts := newServer(t, "")
	routes := [][2]string{{"POST", "/v1/sessions"}, {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA"},
		{"GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA/events"}, {"POST", "/v1/sessions/s-AAAAAAAAAAAAAAAA/cancel"},
		{"GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA/approvals"}, {"POST", "/v1/sessions/s-AAAAAAAAAAAAAAAA/approvals/req_1/approve"},
		{"POST", "/v1/sessions/s-AAAAAAAAAAAAAAAA/approvals/req_1/deny"}, {"POST", "/v1/sessions/s-AAAAAAAAAAAAAAAA/calls/call_1/resolve"},
		{"POST", "/v1/sessions/s-AAAAAAAAAAAAAAAA/steer"}}
	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + token[:len(token)-1], "Bearer " + token + "x",
		"Basic " + token, "Bearer " + token + " " + tokenB, "Bearer abx_alice_env_0123456789", token, "Bearer " + strings.ToUpper(token)} {
		for _, rt := range routes {
			if st, body := do(t, ts, rt[0], rt[1], auth, `{"goal":"x"}`); st != 401 || !strings.Contains(body, `"EAUTH"`) {
				t.Errorf("%s %s with %q: %d %s", rt[0], rt[1], auth, st, body)
			}
		}
	}
	if st, _ := do(t, ts, "GET", "/healthz", "", ""); st != 200 {
		t.Errorf("healthz: %d", st)
	}
	if st, body := do(t, ts, "GET", "/v1/sessions", "Bearer "+token, ""); st != 200 || !strings.Contains(body, `"sessions":[]`) {
		t.Errorf("with the token: %d %s", st, body)
	}
}

// TestCreateValidation: a bad session request is refused with 400 and a
// message naming what is wrong; nothing is created.
func TestCreateValidation(t *testing.T) {
	ts := newServer(t, "")
	env := `"environment":{"workspace":"/w"}`
	pol := `"policy":{"name":"scripted","mode":"good"}`
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{`, "not the expected JSON"},
		{"unknown field", `{"goals":"x",` + pol + `,` + env + `}`, `unknown field \"goals\"`},
		{"two values", `{"goal":"x",` + pol + `,` + env + `} {}`, "more than one JSON value"},
		{"no goal", `{` + pol + `,` + env + `}`, "goal is empty"},
		{"no policy", `{"goal":"x",` + env + `}`, "policy.name is empty"},
		{"bad mode", `{"goal":"x","policy":{"name":"scripted","mode":"nope"},` + env + `}`, "use scripted with mode good"},
		{"no environment", `{"goal":"x",` + pol + `}`, "exactly one of id"},
		{"two environments", `{"goal":"x",` + pol + `,"environment":{"id":"env-1","workspace":"/w"}}`, "exactly one of id"},
		{"limits of an existing one", `{"goal":"x",` + pol + `,"environment":{"id":"env-1","template":"t"}}`, "template and limits are its own"},
		{"negative budget", `{"goal":"x",` + pol + `,` + env + `,"budgets":{"max_steps":-1}}`, "budgets must be non-negative"},
		{"endless timeout", `{"goal":"x",` + pol + `,` + env + `,"budgets":{"timeout_seconds":1e9}}`, "at most a week"},
		{"approvals mode", `{"goal":"x",` + pol + `,` + env + `,"approvals":"maybe"}`, `approvals \"maybe\": use wait or pause`},
		{"permissions", `{"goal":"x",` + pol + `,` + env + `,"permissions":"rules: [{effect: teleport}]"}`, "permissions:"},
		{"grant", `{"goal":"x",` + pol + `,` + env + `,"grants":["write"]}`, "grants:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := do(t, ts, "POST", "/v1/sessions", "Bearer "+token, tc.body)
			if st != 400 || !strings.Contains(body, `"EINVAL"`) || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s (want 400 naming %q)", st, body, tc.want)
			}
		})
	}
	if _, body := do(t, ts, "GET", "/v1/sessions", "Bearer "+token, ""); !strings.Contains(body, `"sessions":[]`) {
		t.Errorf("a refused request created a session: %s", body)
	}
}

// TestSessionErrors: a missing session is 404; a session whose daemon is not
// there waits for it (the error shown), and answers to requests it does not await
// are refused with 400 naming the request.
func TestSessionErrors(t *testing.T) {
	ts := newServer(t, "")
	a := "Bearer " + token
	if st, body := do(t, ts, "GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA", a, ""); st != 404 || !strings.Contains(body, "ENOENT") {
		t.Errorf("a missing session: %d %s", st, body)
	}
	if st, body := do(t, ts, "GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA/events?after=x", a, ""); st != 400 || !strings.Contains(body, `after=\"x\"`) {
		t.Errorf("a bad watermark: %d %s", st, body)
	}
	st, body := do(t, ts, "POST", "/v1/sessions", a, `{"goal":"x","policy":{"name":"scripted","mode":"good"},"environment":{"workspace":"/w"}}`)
	if st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	id := body[strings.Index(body, `"id":"`)+6:][:18]
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(body, `"state":"waiting"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		_, body = do(t, ts, "GET", "/v1/sessions/"+id, a, "")
	}
	if !strings.Contains(body, `"state":"waiting"`) || !strings.Contains(body, "127.0.0.1:1") {
		t.Errorf("a session without its daemon: %s", body)
	}
	if st, body := do(t, ts, "POST", "/v1/sessions/"+id+"/approvals/req_9/approve", a, ""); st != 400 || !strings.Contains(body, "req_9") {
		t.Errorf("an answer to nothing: %d %s", st, body)
	}
	if st, body := do(t, ts, "GET", "/v1/sessions/"+id+"/events?from=end", a, ""); st != 400 || !strings.Contains(body, `from=\"end\"`) {
		t.Errorf("a bad starting point: %d %s", st, body)
	}
}

// TestTenantRate: a tenant past its rate (tenants.NAME.rate) gets 429 ERATE,
// retryable, on any route; another tenant's requests are not counted against it.
func TestTenantRate(t *testing.T) {
	ts := newServer(t, "rate: {per_second: 0.001, burst: 2}")
	for i := range 2 {
		if st, body := do(t, ts, "GET", "/v1/sessions", "Bearer "+token, ""); st != 200 {
			t.Fatalf("request %d within the burst: %d %s", i+1, st, body)
		}
	}
	if st, body := do(t, ts, "GET", "/v1/sessions/s-AAAAAAAAAAAAAAAA", "Bearer "+token, ""); st != 429 || !strings.Contains(body, `"ERATE"`) || !strings.Contains(body, `"retryable":true`) {
		t.Errorf("past the rate: %d %s, want 429 ERATE", st, body)
	}
	for range 5 {
		if st, body := do(t, ts, "GET", "/v1/sessions", "Bearer "+tokenB, ""); st != 200 {
			t.Fatalf("bob, who has no rate: %d %s", st, body)
		}
	}
}
