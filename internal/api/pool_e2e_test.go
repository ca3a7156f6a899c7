package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
)

// TestE2EPoolQuota: environments claimed from a warm pool count against their
// tenant's quota like any other; the pool's unclaimed members count against
// no tenant (a tenant with a quota of one still gets its one).
func TestE2EPoolQuota(t *testing.T) {
	x := newE2EWith(t, func(c *config.Config) {
		a := c.Tenants["a"]
		a.Quota.Environments = 1
		c.Tenants["a"] = a
		// Tenant a has a memory quota: its creates get limits.default_memory.
		c.Pools = []config.Pool{{Min: 2, Memory: c.Limits.DefaultMemory, WorkspaceBytes: c.Limits.DefaultWorkspace}}
	})
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); x.mgr.PoolStats()[0].Ready < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool never filled: %+v", x.mgr.PoolStats())
		}
	}
	e, err := x.a.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if s := x.mgr.PoolStats()[0]; s.Claims != 1 {
		t.Fatalf("the create did not claim a member: %+v", s)
	}
	if res, err := x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec in a claimed environment: %+v %v", res, err)
	}
	_, err = x.a.Create(ctx, client.CreateRequest{})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "EQUOTA" {
		t.Fatalf("a second create over a quota of one: %v", err)
	}
	if s := x.mgr.PoolStats()[0]; s.Claims != 1 {
		t.Fatalf("a refused create claimed a member: %+v", s)
	}
	if envs, err := x.b.List(ctx, nil); err != nil || len(envs) != 0 {
		t.Fatalf("tenant b lists %v, %v", envs, err)
	}
	// The operator sees the pools; a tenant's admin does not.
	req, _ := http.NewRequest("GET", x.ts.URL+"/metrics", nil)
	for tok, want := range map[string]bool{api.TokOp: true, api.TokA: false} {
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.Contains(string(b), `agentbox_pool_claims_total{pool="0"} 1`); got != want {
			t.Errorf("token %s sees the pool's claims: %v, want %v", tok[:4], got, want)
		}
	}
}
