package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
)

const (
	tokA     = "tok-a-0123456789abcdef"
	tokARead = "tok-a-read-0123456789"
	tokB     = "tok-b-0123456789abcdef"
	tokRate  = "tok-r-0123456789abcdef"
	tokOp    = "tok-operator-0123456789"
)

const testConfig = `
state_dir: /var/lib/agentbox-test
shutdown: {grace: 2s}
limits: {request_bytes: 1M, json_bytes: 64K, default_workspace: 64M}
mcp: {allowed_origins: ["https://App.example.com"]}
tenants:
  a: {quota: {environments: 3, memory: 1200M}, workspace_roots: [%s], network: {allow: ["*.example.com"], allow_private: [10.1.0.0/16]}}
  b: {}
  r: {rate: {per_second: 1, burst: 2}}
tokens:
  - {name: a-all, token: ` + tokA + `, tenant: a, scopes: [admin]}
  - {name: a-read, token: ` + tokARead + `, tenant: a, scopes: ["file:read"]}
  - {name: b-all, token: ` + tokB + `, tenant: b, scopes: ["env:create", exec, "file:read", "file:write", "artifact:read"]}
  - {name: r, token: ` + tokRate + `, tenant: r, scopes: ["env:create"]}
  - {name: operator, token: ` + tokOp + `, tenant: b, scopes: [operator]}
`

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	t    *testing.T
	srv  *Server
	mem  *memService
	ts   *httptest.Server
	log  *syncBuffer
	root string // tenant a's workspace root
}

// newHarness serves an in-memory service, or what wrap makes of it.
func newHarness(t *testing.T, wrap ...func(*memService) env.Service) *harness {
	t.Helper()
	root := t.TempDir()
	cfg, err := config.Parse([]byte(fmt.Sprintf(testConfig, root)), "")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, mem: newMem(), log: &syncBuffer{}, root: root}
	var svc env.Service = h.mem
	for _, w := range wrap {
		svc = w(h.mem)
	}
	h.srv, err = New(Options{Config: cfg, Service: svc, Logger: slog.New(slog.NewTextHandler(h.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	return h
}

func (h *harness) client(token string) *client.Client {
	h.t.Helper()
	c, err := client.New(client.Options{URL: h.ts.URL, Token: token})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// do sends a raw request and returns status, headers and body.
func (h *harness) do(method, path, token string, body []byte, hdr ...string) (int, http.Header, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.ts.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func mkdir(d string) error { return os.MkdirAll(d, 0o755) }

// symlinkTo makes a symlink inside dir pointing at target and returns its path.
func symlinkTo(t *testing.T, dir, target string) string {
	t.Helper()
	p := filepath.Join(dir, "link")
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// doCtx sends a GET and reads the body until ctx ends or the server closes it.
func (h *harness) doCtx(ctx context.Context, method, path, token string, hdr ...string) (int, http.Header, string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, h.ts.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func envOwner(tenant string) env.Owner { return env.Owner{Tenant: tenant} }
