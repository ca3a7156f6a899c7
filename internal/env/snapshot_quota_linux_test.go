package env

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSnapshotQuota: a tenant's snapshots count what their layers hold against
// its SnapshotQuotas: a snapshot that would pass it is ErrQuota before anything
// changed (the environment's command runs on, its files stay), a fork from a
// snapshot it holds already costs nothing, and the snapshot's bytes come back
// only when the last environment on it (the source's, then the forks') is
// destroyed. Another tenant's snapshots are not counted.
func TestSnapshotQuota(t *testing.T) {
	const quota = 24 << 20
	m := newManager(t, Config{ReapInterval: time.Hour, SnapshotQuotas: map[string]int64{alice.Tenant: quota}})
	ctx := context.Background()
	held := func() int64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.snapBytes[alice.Tenant]
	}
	a := create(t, m, CreateOptions{}).ID
	sh(t, m, a, "head -c 16777216 /dev/zero > first")
	s1, err := m.Snapshot(ctx, alice, a)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Bytes < 16<<20 || s1.Bytes > 17<<20 || held() != s1.Bytes {
		t.Fatalf("a snapshot of 16 MiB written: Bytes %d, tenant holds %d", s1.Bytes, held())
	}

	// At quota: refused, nothing changed.
	sh(t, m, a, "head -c 16777216 /dev/zero > second")
	proc, err := m.Start(ctx, alice, a, ExecRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, alice, a); !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "snapshot_bytes") {
		t.Fatalf("a snapshot past the quota = %v, want ErrQuota naming snapshot_bytes", err)
	}
	if _, err := m.Fork(ctx, alice, a, ForkOptions{Count: 1}); !errors.Is(err, ErrQuota) {
		t.Errorf("a fork taking a snapshot past the quota = %v, want ErrQuota", err)
	}
	if info, _ := m.Get(ctx, alice, a); info.Snapshot != s1.ID {
		t.Errorf("after the refusals the environment is on snapshot %q, want %s", info.Snapshot, s1.ID)
	}
	if out := sh(t, m, a, "ls; pgrep -x sleep >/dev/null && echo sleeping"); !strings.Contains(out, "second") || !strings.Contains(out, "sleeping") {
		t.Errorf("after the refusal: %q, want its file and its command still there", out)
	}
	if held() != s1.Bytes {
		t.Errorf("refusals left the tenant holding %d, want %d", held(), s1.Bytes)
	}
	m.Signal(ctx, alice, a, proc, "KILL")

	// Another tenant is not counted against alice's quota.
	b := create(t, m, CreateOptions{Owner: bob}).ID
	if _, err := m.Exec(ctx, bob, b, ExecRequest{Argv: []string{"sh", "-c", "head -c 16777216 /dev/zero > f"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, bob, b); err != nil {
		t.Errorf("bob's snapshot: %v", err)
	}

	// Forks of the snapshot held cost nothing; it lives while one stands on it.
	forks, err := m.Fork(ctx, alice, a, ForkOptions{Count: 2, Snapshot: s1.ID})
	if err != nil {
		t.Fatalf("fork from the snapshot held: %v", err)
	}
	if err := m.Destroy(ctx, alice, a); err != nil {
		t.Fatal(err)
	}
	if err := m.Destroy(ctx, alice, forks[0].ID); err != nil {
		t.Fatal(err)
	}
	if held() != s1.Bytes {
		t.Errorf("with a fork still on the snapshot the tenant holds %d, want %d", held(), s1.Bytes)
	}
	c := create(t, m, CreateOptions{}).ID
	sh(t, m, c, "head -c 16777216 /dev/zero > third")
	if _, err := m.Snapshot(ctx, alice, c); !errors.Is(err, ErrQuota) {
		t.Errorf("a snapshot while a fork holds the first = %v, want ErrQuota", err)
	}
	if err := m.Destroy(ctx, alice, forks[1].ID); err != nil {
		t.Fatal(err)
	}
	if held() != 0 {
		t.Errorf("with no environment on its snapshot the tenant holds %d, want 0", held())
	}
	if _, err := m.Snapshot(ctx, alice, c); err != nil {
		t.Errorf("a snapshot once the last was freed: %v", err)
	}
}
