package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/mcp"
)

// bearerTransport adds a token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mcpServer(t *testing.T) *httptest.Server {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(api.TestConfig, t.TempDir())), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Options{Config: cfg, Service: api.NewMemService()})
	if err != nil {
		t.Fatal(err)
	}
	mcp.Mount(s, mcp.Options{Service: s.Service(), Redactor: s.Redactor(), Denied: s.Metrics().Denied}, cfg.MCP.AllowedOrigins)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
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

// call calls a tool and decodes its structured output, or returns the envelope of
// a tool error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any, out any) *client.Error {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if res.IsError {
		var env client.Envelope
		text := res.Content[0].(*sdk.TextContent).Text
		if err := json.Unmarshal([]byte(text), &env); err != nil || env.Error == nil {
			t.Fatalf("%s: tool error is not an envelope: %q", name, text)
		}
		return env.Error
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: output %s: %v", name, b, err)
	}
	return nil
}

// TestMCPOverHTTP: the SDK's own client over streamable HTTP at /mcp, behind the
// same tokens: tools work as the token's tenant, another tenant's environment is
// ENOENT (a tool error with the envelope), a missing scope is EPERM, and no token
// is refused before MCP starts.
func TestMCPOverHTTP(t *testing.T) {
	ts := mcpServer(t)
	if _, err := mcpSession(t, ts.URL, ""); err == nil {
		t.Fatal("connected without a token")
	}
	a, err := mcpSession(t, ts.URL, api.TokA)
	if err != nil {
		t.Fatal(err)
	}
	var e client.Environment
	if ee := call(t, a, "env_create", map[string]any{"preset": "t", "labels": map[string]string{"via": "mcp"}}, &e); ee != nil {
		t.Fatalf("env_create: %v", ee)
	}
	if e.Owner.Tenant != "a" || e.Labels["via"] != "mcp" {
		t.Fatalf("created %+v", e)
	}
	var w struct{ Bytes int }
	if ee := call(t, a, "file_write", map[string]any{"id": e.ID, "path": "x.txt", "content": "hello"}, &w); ee != nil || w.Bytes != 5 {
		t.Fatalf("file_write: %v %+v", ee, w)
	}
	var r struct{ Content, Encoding string }
	if ee := call(t, a, "file_read", map[string]any{"id": e.ID, "path": "x.txt"}, &r); ee != nil || r.Content != "hello" || r.Encoding != "utf-8" {
		t.Fatalf("file_read: %v %+v", ee, r)
	}
	var res client.Result
	if ee := call(t, a, "exec", map[string]any{"id": e.ID, "argv": []string{"echo", "hi"}}, &res); ee != nil || res.Stdout != "hi\n" {
		t.Fatalf("exec: %v %+v", ee, res)
	}
	var out struct {
		Events []struct {
			Seq        int64
			Kind, Text string
		}
		LastSeq int64 `json:"last_seq"`
		Exited  bool
	}
	var start struct {
		ProcessID string `json:"process_id"`
	}
	if ee := call(t, a, "exec_start", map[string]any{"id": e.ID, "argv": []string{"count", "3", "1ms"}}, &start); ee != nil {
		t.Fatalf("exec_start: %v", ee)
	}
	var lines []string
	after := int64(0)
	for i := 0; i < 10 && !out.Exited; i++ {
		if ee := call(t, a, "exec_output", map[string]any{"id": e.ID, "process_id": start.ProcessID, "after": after}, &out); ee != nil {
			t.Fatalf("exec_output: %v", ee)
		}
		for _, ev := range out.Events {
			lines = append(lines, ev.Text)
		}
		after = out.LastSeq
	}
	if !out.Exited || strings.Join(lines, "") != "line 1\nline 2\nline 3\n" {
		t.Fatalf("exec_output: exited=%v %q", out.Exited, lines)
	}

	b, err := mcpSession(t, ts.URL, api.TokB)
	if err != nil {
		t.Fatal(err)
	}
	var e2 client.Environment
	ee := call(t, b, "env_get", map[string]any{"id": e.ID}, &e2)
	if ee == nil || ee.Code != "ENOENT" || ee.Message != fmt.Sprintf("environment %q not found", e.ID) {
		t.Fatalf("tenant b sees tenant a's environment: %+v", ee)
	}
	ro, err := mcpSession(t, ts.URL, api.TokARead)
	if err != nil {
		t.Fatal(err)
	}
	if ee := call(t, ro, "file_write", map[string]any{"id": e.ID, "path": "x.txt", "content": "no"}, &w); ee == nil || ee.Code != "EPERM" {
		t.Fatalf("read-only token wrote: %+v", ee)
	}
	if ee := call(t, ro, "file_read", map[string]any{"id": e.ID, "path": "x.txt"}, &r); ee != nil || r.Content != "hello" {
		t.Fatalf("read-only token: %v %q", ee, r.Content)
	}
}
