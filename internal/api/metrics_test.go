package api

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/client"
)

// TestMetrics: every figure is counted per tenant; the operator sees them all.
// Issue 10, finding 11: a tenant's admin token saw other tenants' series. It now
// sees its own tenant's series and nothing else (not the daemon's own figures).
func TestMetrics(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	b := h.client(tokB)
	eb, err := b.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, eb.ID, client.ExecRequest{Argv: []string{"timeout"}}); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"echo", "x"}, {"timeout"}, {"timeout"}} {
		if _, err := a.Exec(ctx, e.ID, client.ExecRequest{Argv: argv}); err != nil {
			t.Fatal(err)
		}
	}
	proc, _ := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"timeout"}})
	for i := 0; i < 2; i++ { // waited twice, counted once
		if _, err := a.Wait(ctx, e.ID, proc); err != nil {
			t.Fatal(err)
		}
	}
	h.do("GET", "/v1/environments", "", nil)                             // auth
	h.do("POST", "/v1/environments", tokARead, []byte(`{"preset":"t"}`)) // scope
	h.do("GET", "/v1/environments/"+e.ID+"/files?path=../x", tokA, nil)  // path escape
	h.do("POST", "/v1/environments", tokRate, []byte(`{"preset":"t"}`))  // tenant r
	tenantA := []string{
		`agentbox_environments{tenant="a"} 1`,
		`agentbox_exec_duration_seconds_count{tenant="a"} 3`,
		`agentbox_kills_total{limit="timeout",tenant="a"} 3`,
		`agentbox_policy_denials_total{reason="perm",tenant="a"} 2`,
		`agentbox_http_requests_total{code="201",route="POST /v1/environments",tenant="a"} 1`,
	}
	others := []string{
		`agentbox_environments{tenant="b"} 1`,
		`agentbox_environments{tenant="r"} 1`,
		`agentbox_kills_total{limit="timeout",tenant="b"} 1`,
		`agentbox_policy_denials_total{reason="auth",tenant=""} 1`,
		`agentbox_http_requests_total{code="201",route="POST /v1/environments",tenant="b"} 1`,
		`go_goroutines `,
		`process_open_fds `,
	}
	metrics := func(token string) string {
		t.Helper()
		st, _, body := h.do("GET", "/metrics", token, nil)
		if st != 200 {
			t.Fatalf("metrics: %d %s", st, body)
		}
		return string(body)
	}
	op := metrics(tokOp)
	for _, want := range append(tenantA, others...) {
		if !strings.Contains(op, want) {
			t.Errorf("the operator's metrics lack %q", want)
		}
	}
	own := metrics(tokA)
	for _, want := range tenantA {
		if !strings.Contains(own, want+"\n") {
			t.Errorf("tenant a's metrics lack %q", want)
		}
	}
	for _, line := range strings.Split(own, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, `tenant="a"`) {
			t.Errorf("tenant a's admin sees a series not of tenant a: %q", line)
		}
	}
	// Neither a tenant's other tokens nor an operator token lacking nothing else
	// changes that: admin is needed for a tenant's own view.
	if st, _, _ := h.do("GET", "/metrics", tokARead, nil); st != 403 {
		t.Errorf("file:read token on /metrics: %d", st)
	}
	if t.Failed() {
		t.Logf("operator:\n%s\ntenant a:\n%s", op, own)
	}
}

func TestRate(t *testing.T) {
	h := newHarness(t)
	var codes []int
	for i := 0; i < 4; i++ {
		st, hdr, body := h.do("GET", "/v1/environments", tokRate, nil)
		codes = append(codes, st)
		if st == 429 {
			if e := envelopeOf(t, body); e.Code != "ERATE" || !e.Retryable || hdr.Get("Retry-After") == "" {
				t.Fatalf("429 %+v %v", e, hdr)
			}
		}
	}
	// Burst 2 at 1/s: two pass, the next are refused (the test takes far less
	// than the second a new token needs).
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || codes[3] != 429 {
		t.Fatalf("codes %v", codes)
	}
	// Other tenants are not affected.
	if st, _, _ := h.do("GET", "/v1/environments", tokA, nil); st != 200 {
		t.Fatalf("tenant a limited by tenant r's rate: %d", st)
	}
}
