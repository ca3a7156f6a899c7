package env

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newPoolManager is newManager whose cleanup also checks that the pools'
// members, ready when the test ended, left nothing on the host.
func newPoolManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	var prints []footprint
	t.Cleanup(func() { // runs after newManager's Close
		for _, f := range prints {
			f.check(t)
		}
	})
	m := newManager(t, cfg)
	t.Cleanup(func() {
		for _, e := range members(m) {
			prints = append(prints, footprintOf(e))
		}
	})
	return m
}

// members returns the ready members of m's pools.
func members(m *Manager) []*environment {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*environment
	for _, p := range m.poolList {
		out = append(out, p.ready...)
	}
	return out
}

// waitPool waits until pool i of m has ready members and none starting, and
// returns its state.
func waitPool(t *testing.T, m *Manager, i, ready int) PoolStat {
	t.Helper()
	var s PoolStat
	if !settle(func() bool { s = m.PoolStats()[i]; return s.Ready == ready && s.Starting == 0 }) {
		t.Fatalf("pool %d: %+v, want %d ready", i, s, ready)
	}
	return s
}

// confinement describes what a command sees of its environment's confinement
// and of its fresh state: the same for a claimed member and a fresh create.
// The processes are the shell's own glob of /proc with their names read by
// builtins, taken while the shell has no child: `ls /proc | grep -c` counted
// grep or not as it raced ls (TestPoolClaim failed 1 run in 4 under load).
func confinement(t *testing.T, m *Manager, owner Owner, id string) string {
	t.Helper()
	res, err := m.Exec(context.Background(), owner, id, ExecRequest{Argv: []string{"/bin/sh", "-c",
		"id -u; grep -E '^(NoNewPrivs|Seccomp|CapEff|CapBnd|CapAmb):' /proc/self/status; " +
			"ls -A /workspace /tmp; for p in /proc/[0-9]*; do read -r c < $p/comm; echo \"process $c\"; done; hostname; " +
			"touch /etc/x 2>&1 | sed 's/.*: //'; awk '{print $1, $3}' /proc/self/uid_map"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec: %v %+v", err, res)
	}
	e := envOf(t, m, id)
	var limits []string
	for _, d := range cgroupDirsOf(e.ns().Pid()) {
		for _, f := range []string{"memory.limit_in_bytes", "pids.max"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				limits = append(limits, f+"="+strings.TrimSpace(string(b)))
			}
		}
	}
	return res.Stdout + strings.Join(limits, " ")
}

// TestPoolClaim: a create of a pool's shape gets a ready member, given its
// owner and labels at the claim, confined and fresh as a create without a pool
// is; the pool starts a new member. A claimed environment is never handed out
// again: another tenant's create gets another sandbox, and destroying it
// returns nothing to the pool. Members belong to no tenant.
func TestPoolClaim(t *testing.T) {
	m := newPoolManager(t, Config{Pools: []Pool{{Min: 1}}})
	ctx := context.Background()
	waitPool(t, m, 0, 1)
	member := members(m)[0]
	if envs, _ := m.List(ctx, alice, nil); len(envs) != 0 {
		t.Fatalf("alice lists the pool's member: %+v", envs)
	}
	if _, err := m.Get(ctx, alice, member.id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an unclaimed member = %v, want ErrNotFound", err)
	}

	before := time.Now().UTC()
	a := create(t, m, CreateOptions{Labels: map[string]string{"run": "7"}, TTL: time.Hour})
	if s := m.PoolStats()[0]; s.Claims != 1 || s.Misses != 0 {
		t.Fatalf("stats after a claim: %+v", s)
	}
	if envOf(t, m, a.ID) != member {
		t.Fatal("the create did not claim the ready member")
	}
	if a.Owner != alice || a.Labels["run"] != "7" || a.CreatedAt.Before(before) || !a.ExpiresAt.After(before.Add(59*time.Minute)) {
		t.Fatalf("claimed Info: %+v", a)
	}
	// A create of another shape starts cold: it is the reference for what a
	// fresh environment looks like.
	cold := create(t, m, CreateOptions{Limits: Limits{Pids: 999}})
	if s := m.PoolStats()[0]; s.Claims != 1 || s.Misses != 0 {
		t.Fatalf("a create of another shape touched the pool: %+v", s)
	}
	want := strings.Replace(confinement(t, m, alice, cold.ID), "pids.max=999", "pids.max="+strconv.Itoa(int(a.Limits.Pids)), 1)
	if got := confinement(t, m, alice, a.ID); got != want {
		t.Fatalf("a claimed environment sees\n%s\na fresh one\n%s", got, want)
	}

	// The pool refills with a new sandbox, which bob's create claims.
	waitPool(t, m, 0, 1)
	next := members(m)[0]
	if next == member {
		t.Fatal("the claimed member is still in the pool")
	}
	sh(t, m, a.ID, "echo alice > /workspace/secret; echo alice > /tmp/secret")
	b := create(t, m, CreateOptions{Owner: bob})
	eb := envOf(t, m, b.ID)
	if eb != next || eb.uid == member.uid || eb.ns().Pid() == member.ns().Pid() {
		t.Fatalf("bob got member %p (uid %d) after alice's %p (uid %d)", eb, eb.uid, member, member.uid)
	}
	res, err := m.Exec(ctx, bob, b.ID, ExecRequest{Argv: []string{"/bin/sh", "-c", "cat /workspace/secret /tmp/secret 2>/dev/null; ls -A /workspace /tmp"}})
	if err != nil || res.Stdout != "/tmp:\n\n/workspace:\n" {
		t.Fatalf("bob sees alice's files: %v %+v", err, res)
	}
	if _, err := m.Exec(ctx, bob, a.ID, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob runs in alice's claimed environment: %v", err)
	}

	// Destroying returns nothing to the pool: a fresh member replaces it.
	fa := footprintOf(member)
	if err := m.Destroy(ctx, alice, a.ID); err != nil {
		t.Fatal(err)
	}
	waitPool(t, m, 0, 1)
	for _, e := range members(m) {
		if e == member || e == next {
			t.Fatal("a claimed environment went back to the pool")
		}
	}
	if !settle(fa.gone) {
		fa.check(t)
	}
	if _, err := m.Get(ctx, alice, a.ID); !errors.Is(err, ErrNotFound) && err != nil {
		t.Fatal(err)
	}
}

// TestPoolShapes: a create matches a pool only when its sandbox would be
// started the same: other limits, a workspace, mounts or a network start cold;
// a networked member is given the create's policy at the claim.
func TestPoolShapes(t *testing.T) {
	ws := fixture(t)
	m := newPoolManager(t, Config{Pools: []Pool{{Min: 1}, {Network: true, Min: 1}}})
	waitPool(t, m, 0, 1)
	waitPool(t, m, 1, 1)
	for name, o := range map[string]CreateOptions{
		"memory":    {Limits: Limits{Memory: 300 << 20}},
		"workspace": {Workspace: ws},
		"mount":     {Mounts: []Mount{{Source: ws, Target: "/opt/src"}}},
		"ttl":       {Network: &Network{}, TTL: time.Hour}, // a CA that lives ttl+1h
	} {
		create(t, m, o)
		for i, s := range m.PoolStats() {
			if s.Claims != 0 || s.Misses != 0 {
				t.Fatalf("%s: pool %d served it: %+v", name, i, s)
			}
		}
	}
	n := Network{Allow: []string{"example.com"}}
	info := create(t, m, CreateOptions{Network: &n})
	if s := m.PoolStats(); s[0].Claims != 0 || s[1].Claims != 1 {
		t.Fatalf("networked create: %+v", s)
	}
	if info.Network == nil || len(info.Network.Allow) != 1 || info.Network.Allow[0] != "example.com" {
		t.Fatalf("claimed network: %+v", info.Network)
	}
	if got := envOf(t, m, info.ID).proxy; got == nil {
		t.Fatal("claimed networked environment has no proxy")
	}
	plain := create(t, m, CreateOptions{})
	if envOf(t, m, plain.ID).proxy != nil || m.PoolStats()[0].Claims != 1 {
		t.Fatalf("a create without network got a networked member: %+v", m.PoolStats())
	}
}

// TestPoolAdapts: a claim that drains the pool (takes its last ready member,
// or finds none) doubles its size up to Max, the filler fills it, and idle
// periods halve it back to Min, destroying the surplus.
func TestPoolAdapts(t *testing.T) {
	m := newPoolManager(t, Config{ReapInterval: time.Hour, Pools: []Pool{{Min: 1, Max: 3, Idle: time.Hour}}})
	waitPool(t, m, 0, 1)
	create(t, m, CreateOptions{}) // drains it
	s := waitPool(t, m, 0, 2)
	if s.Size != 2 || s.Claims != 1 || s.Misses != 0 {
		t.Fatalf("after a draining claim: %+v", s)
	}
	create(t, m, CreateOptions{})
	if s := m.PoolStats()[0]; s.Size != 2 {
		t.Fatalf("a claim that left a member ready grew the pool: %+v", s)
	}
	create(t, m, CreateOptions{}) // drains it: 4, capped at 3
	// As many creates as the pool holds and one more: whether the last finds a
	// member the filler started meanwhile or none, the size stays at Max.
	for range 4 {
		create(t, m, CreateOptions{})
	}
	if s := waitPool(t, m, 0, 3); s.Size != 3 || s.Claims+s.Misses != 7 {
		t.Fatalf("after a burst past Max: %+v", s)
	}
	before := members(m)
	var prints []footprint
	for _, e := range before {
		prints = append(prints, footprintOf(e))
	}
	now := time.Now()
	m.shrink(now.Add(30 * time.Minute)) // not idle for long enough
	if s := m.PoolStats()[0]; s.Size != 3 || s.Ready != 3 {
		t.Fatalf("shrunk before Idle: %+v", s)
	}
	m.shrink(now.Add(2 * time.Hour))
	if s := m.PoolStats()[0]; s.Size != 1 || s.Ready != 1 {
		t.Fatalf("after an idle hour: %+v", s)
	}
	// The oldest go; the newest stays ready.
	if kept := members(m)[0]; kept != before[2] {
		t.Fatal("shrinking kept an older member")
	}
	for _, f := range prints[:2] {
		if !settle(f.gone) {
			f.check(t)
		}
	}
	m.shrink(now.Add(4 * time.Hour))
	if s := m.PoolStats()[0]; s.Size != 1 || s.Ready != 1 {
		t.Fatalf("shrunk below Min: %+v", s)
	}
}

// TestPoolMemberDeath: a member whose init dies before a claim is removed,
// cleaned up and replaced; no create ever gets it.
func TestPoolMemberDeath(t *testing.T) {
	m := newPoolManager(t, Config{Pools: []Pool{{Min: 1}}})
	waitPool(t, m, 0, 1)
	dead := members(m)[0]
	f := footprintOf(dead)
	if err := syscall.Kill(dead.ns().Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var s PoolStat
	if !settle(func() bool { s = m.PoolStats()[0]; return s.Died == 1 && s.Ready == 1 && s.Starting == 0 }) {
		t.Fatalf("after a member's death: %+v", s)
	}
	if members(m)[0] == dead {
		t.Fatal("the dead member is still ready")
	}
	if !settle(f.gone) {
		f.check(t)
	}
	info := create(t, m, CreateOptions{})
	if envOf(t, m, info.ID) == dead || sh(t, m, info.ID, "echo ok") != "ok\n" {
		t.Fatal("a create got the dead member")
	}
}

// TestPoolQuota: members count towards MaxEnvironments but give way to
// creates: a create at the cap destroys a ready member; past the cap with no
// member left, creates fail with ErrQuota.
func TestPoolQuota(t *testing.T) {
	m := newPoolManager(t, Config{MaxEnvironments: 2, Pools: []Pool{{Min: 2}}})
	waitPool(t, m, 0, 2)
	other := CreateOptions{Limits: Limits{Pids: 500}}
	create(t, m, other)
	create(t, m, other)
	if s := m.PoolStats()[0]; s.Ready+s.Starting != 0 {
		t.Fatalf("members beyond the cap: %+v", s)
	}
	if _, err := m.Create(context.Background(), CreateOptions{Owner: alice}); !errors.Is(err, ErrQuota) {
		t.Fatalf("create past the cap = %v, want ErrQuota", err)
	}
}

// TestPoolCountsCreates: creates under way count against MaxEnvironments
// before their sandboxes start (issue 16: the filler counted only the
// environments and its members, and Create only the environments, so a pool
// filling beside creates still starting, or concurrent creates, went past the
// cap). With two creates reserved at a cap of 2 the filler starts no member,
// and drops one it had started; released, the pool fills. Of four concurrent
// creates at the cap, two get environments and two ErrQuota, and no member is
// kept beside them.
func TestPoolCountsCreates(t *testing.T) {
	m := newPoolManager(t, Config{MaxEnvironments: 2, Pools: []Pool{{Min: 2}}})
	for range 2 {
		if err := m.reserve(1); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.reserve(1); !errors.Is(err, ErrQuota) {
		t.Fatalf("a third reservation at a cap of 2 = %v, want ErrQuota", err)
	}
	waitPool(t, m, 0, 0) // a member that started before the reservations is dropped
	if p, _ := m.nextToFill(time.Now()); p != nil {
		t.Fatal("the filler would start a member beside two creates under way at a cap of 2")
	}
	m.unreserve(1)
	m.unreserve(1)
	waitPool(t, m, 0, 2)

	other := CreateOptions{Owner: alice, Limits: Limits{Pids: 500}}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := m.Create(context.Background(), other)
			errs <- err
		}()
	}
	made := 0
	for range 4 {
		switch err := <-errs; {
		case err == nil:
			made++
		case !errors.Is(err, ErrQuota):
			t.Fatalf("Create: %v", err)
		}
	}
	if envs, _ := m.List(context.Background(), alice, nil); made != 2 || len(envs) != 2 {
		t.Fatalf("%d of 4 concurrent creates succeeded, %d listed; want 2 at a cap of 2", made, len(envs))
	}
	s := waitPool(t, m, 0, 0)
	if p, _ := m.nextToFill(time.Now()); p != nil {
		t.Fatalf("the filler would start a member beside 2 environments at a cap of 2: %+v", s)
	}
}

// TestPoolConfig: a pool that could never serve a create, or one that is
// wrong, is refused by NewManager with what to change.
func TestPoolConfig(t *testing.T) {
	ws := t.TempDir()
	for name, tc := range map[string]struct {
		pools []Pool
		want  string
	}{
		"negative":       {[]Pool{{Min: -1}}, "must not be negative"},
		"max below min":  {[]Pool{{Min: 3, Max: 2}}, "max 2 is below min 3"},
		"empty":          {[]Pool{{}}, "set min or max"},
		"ttl no network": {[]Pool{{Min: 1, TTL: time.Hour}}, "ttl is for networked pools only"},
		"preset":         {[]Pool{{Min: 1, Preset: "nope"}}, `no workspace preset "nope"`},
		"both":           {[]Pool{{Min: 1, Preset: "p", Workspace: ws}}, "not both"},
		"relative":       {[]Pool{{Min: 1, Workspace: "rel"}}, "absolute"},
		"template":       {[]Pool{{Min: 1, Template: "base"}}, "no image store"},
		"memory":         {[]Pool{{Min: 1, Limits: Limits{Memory: 5}}}, "at least 1 MiB"},
		"duplicate":      {[]Pool{{Min: 1}, {Max: 2}}, "pools[1]: the same shape"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(Config{StateDir: t.TempDir(), Presets: map[string]string{"p": ws}, Pools: tc.pools})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewManager = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}
