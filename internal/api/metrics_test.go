package api

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/client"
)

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Template: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client(tokB).Create(ctx, client.CreateRequest{Template: "t"}); err != nil {
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
	h.do("GET", "/v1/environments", "", nil)                               // auth
	h.do("POST", "/v1/environments", tokARead, []byte(`{"template":"t"}`)) // scope
	h.do("GET", "/v1/environments/"+e.ID+"/files?path=../x", tokA, nil)    // path escape
	st, _, body := h.do("GET", "/metrics", tokA, nil)
	if st != 200 {
		t.Fatalf("metrics: %d %s", st, body)
	}
	for _, want := range []string{
		`agentbox_environments{tenant="a"} 1`,
		`agentbox_environments{tenant="b"} 1`,
		`agentbox_environments{tenant="r"} 0`,
		`agentbox_exec_duration_seconds_count 3`,
		`agentbox_kills_total{limit="timeout"} 3`,
		`agentbox_policy_denials_total{reason="auth"} 1`,
		`agentbox_policy_denials_total{reason="perm"} 2`,
		`agentbox_http_requests_total{code="201",route="POST /v1/environments"} 2`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("%s", body)
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
