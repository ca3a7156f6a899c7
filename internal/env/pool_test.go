package env

import (
	"testing"
	"time"
)

// unstartedPool is a Manager with one pool of cfg and no filler: claim and
// nextToFill run on members that are only placeholders.
func unstartedPool(cfg Pool, ready int) (*Manager, *pool) {
	cfg.Max = max(cfg.Max, cfg.Min) // as newPools defaults it
	p := &pool{cfg: cfg, size: cfg.Min}
	for range ready {
		p.ready = append(p.ready, &environment{})
	}
	m := &Manager{envs: map[string]*environment{}, pools: map[shape]*pool{p.key: p}, poolList: []*pool{p}}
	return m, p
}

// TestPoolBurstGrowth: claims that leave members ready keep the size; the one
// that takes the last doubles it, and so does every miss after, never past
// Max; each claim hands out a distinct member, none twice.
func TestPoolBurstGrowth(t *testing.T) {
	m, p := unstartedPool(Pool{Min: 3, Max: 10}, 3)
	seen := map[*environment]bool{}
	var sizes []int
	for range 5 {
		if e := m.claim(shape{}, nil); e != nil {
			if seen[e] {
				t.Fatal("a member was claimed twice")
			}
			seen[e] = true
		}
		sizes = append(sizes, p.size)
	}
	// 2 left, 1 left, drained (6), a miss (12: capped at 10), a miss.
	if want := []int{3, 3, 6, 10, 10}; !equalInts(sizes, want) {
		t.Fatalf("sizes %v, want %v", sizes, want)
	}
	if len(seen) != 3 || p.stat.Claims != 3 || p.stat.Misses != 2 {
		t.Fatalf("%d members claimed, stats %+v", len(seen), p.stat)
	}
	// Idle halves it back, not below Min.
	for _, want := range []int{5, 3, 3} {
		p.lastMiss = time.Time{}
		m.shrink(time.Now())
		if p.size != want {
			t.Fatalf("after an idle period: size %d, want %d", p.size, want)
		}
	}
}

// TestPoolRefillQuiet: a pool waits refillQuiet after its last claim before
// it refills, drained or not (a burst's first commands keep the CPU), and
// then starts one member at a time up to its size.
func TestPoolRefillQuiet(t *testing.T) {
	for _, ready := range []int{0, 1} {
		m, p := unstartedPool(Pool{Min: 3}, ready)
		now := time.Now()
		p.lastClaim, p.streak = now, now
		if got, wait := m.nextToFill(now); got != nil || wait <= 0 || wait > refillQuiet {
			t.Fatalf("%d ready, just claimed: fills %v, waits %v", ready, got != nil, wait)
		}
		later := now.Add(refillQuiet)
		for i := ready; i < 3; i++ {
			if got, _ := m.nextToFill(later); got != p {
				t.Fatalf("%d ready, after the quiet: member %d not started", ready, i)
			}
		}
		if got, _ := m.nextToFill(later); got != nil || p.starting != 3-ready {
			t.Fatalf("%d ready: started past the size (%d starting)", ready, p.starting)
		}
	}
	// Claims that keep coming hold it back refillHold after the first of them
	// at most.
	m, p := unstartedPool(Pool{Min: 2}, 1)
	now := time.Now()
	for at := now; at.Before(now.Add(refillHold)); at = at.Add(refillQuiet / 2) {
		p.ready = append(p.ready, &environment{})
		if m.claimAt(shape{}, nil, at) == nil {
			t.Fatal("no member claimed")
		}
		if got, _ := m.nextToFill(at); got != nil {
			t.Fatalf("refilled %v into a stream of claims", at.Sub(now))
		}
	}
	if got, _ := m.nextToFill(now.Add(refillHold)); got != p {
		t.Fatal("a stream of claims held the refill past refillHold")
	}
	// Misses do not delay it: with no claim for a while, an empty pool fills at once.
	m, p = unstartedPool(Pool{Min: 1, Max: 2}, 0)
	p.lastClaim = time.Now().Add(-time.Second)
	m.claim(shape{}, nil)
	if got, _ := m.nextToFill(time.Now()); got != p {
		t.Fatal("a pool that only missed waited to refill")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
