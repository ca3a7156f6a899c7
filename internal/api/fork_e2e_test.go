package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
)

// TestE2EForkQuota: snapshot and fork over HTTP on a real Manager. A fork past
// the tenant's environment quota is 429 EQUOTA whole (nothing made, the source
// not snapshotted); within it, each fork sees the snapshot and its own writes;
// another tenant gets 404 for the environment and its snapshot; a bad count is
// 400 naming the range.
func TestE2EForkQuota(t *testing.T) {
	x := newE2EWith(t, func(c *config.Config) {
		a := c.Tenants["a"]
		a.Quota.Environments = 3
		c.Tenants["a"] = a
	})
	ctx := context.Background()
	// Small enough that the memory quota (1.2 GB) is not what refuses.
	e, err := x.a.Create(ctx, client.CreateRequest{Workspace: x.ws, Limits: client.Limits{MemoryBytes: 128 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.a.WriteFile(ctx, e.ID, "new.txt", []byte("snap\n")); err != nil {
		t.Fatal(err)
	}
	var ce *client.Error
	if _, err := x.a.Fork(ctx, e.ID, client.ForkRequest{Count: 3}); !errors.As(err, &ce) || ce.Status != 429 || ce.Code != "EQUOTA" {
		t.Fatalf("fork past the quota = %v, want 429 EQUOTA", err)
	}
	if l, _ := x.a.List(ctx, nil); len(l) != 1 || l[0].Snapshot != "" {
		t.Fatalf("after a refused fork: %+v", l)
	}
	if _, err := x.a.Fork(ctx, e.ID, client.ForkRequest{Count: 101}); !errors.As(err, &ce) || ce.Status != 400 || !strings.Contains(ce.Message, "1 to 100") {
		t.Fatalf("fork of 101 = %v, want 400 naming the range", err)
	}
	s, err := x.a.Snapshot(ctx, e.ID)
	if err != nil || s.EnvID != e.ID || s.Depth != 1 {
		t.Fatalf("Snapshot = %+v, %v", s, err)
	}
	forks, err := x.a.Fork(ctx, e.ID, client.ForkRequest{Count: 2, Snapshot: s.ID})
	if err != nil || len(forks) != 2 {
		t.Fatalf("Fork = %+v, %v", forks, err)
	}
	for i, f := range forks {
		if err := x.a.WriteFile(ctx, f.ID, "own.txt", []byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range forks {
		res, err := x.a.Exec(ctx, f.ID, client.ExecRequest{Argv: []string{"sh", "-c", "cat new.txt own.txt a.txt"}})
		if want := "snap\n" + string(rune('0'+i)) + "one\ntwo\nthree\n"; err != nil || res.Stdout != want {
			t.Errorf("fork %d: %+v %v, want %q", i, res, err, want)
		}
	}
	if _, err := x.b.Snapshot(ctx, e.ID); !errors.As(err, &ce) || ce.Status != 404 {
		t.Errorf("tenant b snapshots a's = %v, want 404", err)
	}
	eb, err := x.b.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.b.Fork(ctx, eb.ID, client.ForkRequest{Count: 1, Snapshot: s.ID}); !errors.As(err, &ce) || ce.Status != 404 {
		t.Errorf("tenant b forks from a's snapshot = %v, want 404", err)
	}
	x.noHostPaths(t, err)
}
