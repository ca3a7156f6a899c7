package api

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/egress"
)

// TestNetworkAPI: an environment's network policy at create and through PUT
// /network stays inside its tenant's bound (a tenant without one gets no network),
// needs env:create to change, and its connection log is the owner's alone.
func TestNetworkAPI(t *testing.T) {
	h := newHarness(t)
	a, aRead, b := h.client(tokA), h.client(tokARead), h.client(tokB)
	ctx := context.Background()
	code := func(err error) string {
		var ce *client.Error
		if errors.As(err, &ce) {
			return ce.Code
		}
		return ""
	}
	want := &client.Network{Allow: []string{"api.example.com"}, AllowPrivate: []string{"10.1.2.0/24"},
		DNSOverride: map[string]string{"api.example.com": "10.1.2.3"}}
	e, err := a.Create(ctx, client.CreateRequest{Workspace: h.root, Network: want})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Network, want) {
		t.Errorf("created with network %+v, want %+v", e.Network, want)
	}
	for name, tc := range map[string]struct {
		c    *client.Client
		n    *client.Network
		code string
	}{
		"outside the bound":     {a, &client.Network{Allow: []string{"other.test"}}, client.CodePermission},
		"the bound's suffix":    {a, &client.Network{Allow: []string{"example.com"}}, client.CodePermission},
		"private outside":       {a, &client.Network{Allow: []string{"api.example.com"}, AllowPrivate: []string{"192.168.0.0/16"}}, client.CodePermission},
		"pin to public":         {a, &client.Network{Allow: []string{"api.example.com"}, DNSOverride: map[string]string{"api.example.com": "203.0.113.1"}}, client.CodePermission},
		"invalid":               {a, &client.Network{Allow: []string{"*.com"}}, client.CodeInvalid},
		"not a prefix":          {a, &client.Network{Allow: []string{"api.example.com"}, AllowPrivate: []string{"ten"}}, client.CodeInvalid},
		"tenant without bound":  {b, &client.Network{Allow: []string{"api.example.com"}}, client.CodePermission},
		"tenant without, empty": {b, &client.Network{}, client.CodePermission},
	} {
		t.Run(name, func(t *testing.T) {
			req := client.CreateRequest{Workspace: h.root, Network: tc.n}
			if tc.c == b {
				req = client.CreateRequest{Preset: "t", Network: tc.n}
			}
			if _, err := tc.c.Create(ctx, req); code(err) != tc.code {
				t.Errorf("create: %v, want %s", err, tc.code)
			}
			if tc.c == a {
				if err := a.SetNetwork(ctx, e.ID, *tc.n); code(err) != tc.code {
					t.Errorf("set: %v, want %s", err, tc.code)
				}
			}
		})
	}
	if got, _ := a.Get(ctx, e.ID); !reflect.DeepEqual(got.Network, want) {
		t.Errorf("refused changes changed the policy: %+v", got.Network)
	}
	wider := client.Network{Allow: []string{"*.example.com"}}
	if err := aRead.SetNetwork(ctx, e.ID, wider); code(err) != client.CodePermission {
		t.Errorf("set without env:create: %v", err)
	}
	// A tenant without a bound is refused before any lookup: the same for any id.
	if err := b.SetNetwork(ctx, e.ID, wider); code(err) != client.CodePermission {
		t.Errorf("another tenant's set: %v", err)
	}
	if err := a.SetNetwork(ctx, e.ID, wider); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Get(ctx, e.ID); !reflect.DeepEqual(got.Network, &wider) {
		t.Errorf("after set: %+v, want %+v", got.Network, wider)
	}

	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h.mem.mu.Lock()
	h.mem.envs[e.ID].net = []egress.Event{
		{Seq: 1, Time: at, Proto: "connect", Host: "api.example.com", Port: 443, Addr: netip.MustParseAddr("10.1.2.3"), Decision: egress.Allowed, BytesUp: 10, BytesDown: 20, Duration: time.Second},
		{Seq: 2, Time: at, Proto: "http", Host: "other.test", Port: 80, Decision: egress.Denied, Reason: egress.ReasonNotAllowed},
	}
	h.mem.mu.Unlock()
	evs, err := aRead.NetworkLog(ctx, e.ID, 0)
	if err != nil || len(evs) != 2 || evs[0].Addr != "10.1.2.3" || evs[0].DurationNS != int64(time.Second) || evs[1].Reason != "not_allowed" || evs[1].Addr != "" {
		t.Errorf("log: %+v, %v", evs, err)
	}
	if evs, err := a.NetworkLog(ctx, e.ID, 1); err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		t.Errorf("log after 1: %+v, %v", evs, err)
	}
	if _, err := b.NetworkLog(ctx, e.ID, 0); code(err) != client.CodeNotFound {
		t.Errorf("another tenant's log: %v", err)
	}
	st, _, body := h.do("GET", "/v1/environments/"+e.ID+"/network/log?after=-1", tokA, nil)
	if st != 400 || !strings.Contains(string(body), "after") {
		t.Errorf("after=-1: %d %s", st, body)
	}

	// The stream: the log after Last-Event-ID (or after=), as SSE frames.
	sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
	defer scancel()
	st, hdr, sse := h.doCtx(sctx, "GET", "/v1/environments/"+e.ID+"/network/events?after=0", tokARead, "Last-Event-ID", "1")
	if st != 200 || hdr.Get("Content-Type") != "text/event-stream" || !strings.Contains(sse, "id: 2\nevent: connection\ndata: {\"seq\":2,") ||
		strings.Contains(sse, "id: 1\n") || !strings.Contains(sse, `"reason":"not_allowed"`) {
		t.Errorf("network events: %d %s\n%s", st, hdr.Get("Content-Type"), sse)
	}
	if st, _, _ := h.doCtx(ctx, "GET", "/v1/environments/"+e.ID+"/network/events", tokB); st != 404 {
		t.Errorf("another tenant's stream: %d", st)
	}
}
