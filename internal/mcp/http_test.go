package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/wire"
)

const (
	tokA = "tok-a-0123456789abcdef"
	tokB = "tok-b-0123456789abcdef"
)

// authMux mounts handlers behind bearer tokens, as the API's server does.
type authMux struct {
	mux  *http.ServeMux
	auth *access.Auth
}

func (m authMux) Handle(pattern string, h http.Handler) {
	m.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := m.auth.Request(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(access.WithCaller(r.Context(), c)))
	}))
}

func (m authMux) HandleStream(pattern string, h http.Handler) { m.Handle(pattern, h) }

// httpServer serves the tools at /mcp on loopback, for two tenants' tokens.
func httpServer(t *testing.T) *httptest.Server {
	t.Helper()
	cfg, err := config.Parse([]byte(`
state_dir: /var/lib/agentbox-test
mcp: {allowed_origins: ["https://App.example.com"]}
tenants: {a: {}, b: {}}
tokens:
  - {name: a-all, token: `+tokA+`, tenant: a, scopes: [admin]}
  - {name: b-all, token: `+tokB+`, tenant: b, scopes: [admin]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	m := authMux{mux: http.NewServeMux(), auth: access.NewAuth(cfg)}
	Mount(m, Options{Service: wire.New(stubService{})}, cfg.MCP.AllowedOrigins)
	ts := httptest.NewServer(m.mux)
	t.Cleanup(ts.Close)
	return ts
}

// bearerTransport adds a token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestMCPNeedsACaller: a request the server did not authenticate (no caller in
// its context) is refused by the MCP handler itself.
func TestMCPNeedsACaller(t *testing.T) {
	ts := httptest.NewServer(httpHandler(Options{Service: wire.New(stubService{})}, nil))
	t.Cleanup(ts.Close)
	req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+tokA)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated request: %d", resp.StatusCode)
	}
}

// TestMCPSessionBoundToTenant: a session opened with tenant a's token cannot be
// used with tenant b's token (the SDK compares the token info's user id).
func TestMCPSessionBoundToTenant(t *testing.T) {
	ts := httpServer(t)
	a, err := mcpSession(t, ts.URL, tokA)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokB)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("tenant b used tenant a's session: %d", resp.StatusCode)
	}
	// The same request with a's token works.
	req, _ = http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
	req.Header = resp.Request.Header.Clone()
	req.Header.Set("Authorization", "Bearer "+tokA)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("tenant a's own session: %d", resp.StatusCode)
	}
}

// TestMCPOrigin guards issue 10's finding 13: /mcp did not validate Origin, which
// the MCP streamable HTTP transport requires, so a web page could drive it from a
// browser. A present Origin that is neither configured nor the daemon's own
// loopback origin is refused with 403 on every method; none (a program) passes; on
// a loopback listener a foreign Host (DNS rebinding) is refused too.
func TestMCPOrigin(t *testing.T) {
	ts := httpServer(t)
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	send := func(method, origin, host string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(initialize)
		}
		req, _ := http.NewRequest(method, ts.URL+"/mcp", body)
		req.Header.Set("Authorization", "Bearer "+tokA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" { // end the session it opened
			del, _ := http.NewRequest("DELETE", ts.URL+"/mcp", nil)
			del.Header.Set("Authorization", "Bearer "+tokA)
			del.Header.Set("Mcp-Session-Id", id)
			if r, err := http.DefaultClient.Do(del); err == nil {
				r.Body.Close()
			}
		}
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		method, origin, host string
		ok                   bool
	}{
		{"POST", "", "", true},
		{"POST", "http://127.0.0.1:" + port, "", true},
		{"POST", "http://localhost:" + port, "", true},
		{"POST", "http://[::1]:" + port, "", true},
		{"POST", "https://app.example.com", "", true}, // configured (case aside)
		{"POST", "http://evil.example", "", false},
		{"POST", "null", "", false},
		{"POST", "http://127.0.0.1:1", "", false},        // another local port: another program
		{"POST", "https://127.0.0.1:" + port, "", false}, // not this daemon's scheme
		{"POST", "http://app.example.com", "", false},
		{"GET", "http://evil.example", "", false},
		{"DELETE", "http://evil.example", "", false},
		{"POST", "", "evil.example:" + port, false}, // DNS rebinding
		{"POST", "http://evil.example:" + port, "evil.example:" + port, false},
	} {
		t.Run(tc.method+" "+tc.origin+" "+tc.host, func(t *testing.T) {
			st, body := send(tc.method, tc.origin, tc.host)
			if tc.ok {
				if st != 200 {
					t.Fatalf("refused: %d %s", st, body)
				}
				return
			}
			var env client.Envelope
			if st != 403 || json.Unmarshal([]byte(body), &env) != nil || env.Error == nil || env.Error.Code != "EPERM" ||
				env.Error.SuggestedAction == "" {
				t.Fatalf("want 403 EPERM with an envelope, got %d %s", st, body)
			}
		})
	}
}
