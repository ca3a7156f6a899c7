package env

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/runner"
)

// Pool keeps environments of one shape started ahead of Create: confined,
// idle sandboxes that no one has used, of which a matching Create claims one
// in O(1) instead of starting a sandbox. A claimed member is never returned:
// destroying it ends it like any other environment, and the pool starts a
// fresh one in the background.
//
// A create matches a pool when what its sandbox is started with is the pool's:
// the template, the workspace preset or host directory (neither: an empty
// /workspace), the limits after the Manager's defaults, whether it has a
// network, and no mounts. What differs per create is applied at the claim
// (owner, labels, TTL and idle timeouts, the network policy), so a claimed
// environment is in the state a fresh one would be. A networked member's
// proxy reaches nothing until then.
type Pool struct {
	Template  string `json:"template,omitempty"`
	Preset    string `json:"preset,omitempty"`
	Workspace string `json:"workspace,omitempty"` // absolute host directory
	Limits    Limits `json:"limits"`
	// Network pools environments created with a network. Its proxy's CA lives
	// as a fresh one's would: TTL+1h, so a create matches only with this TTL
	// (after the Manager's DefaultTTL); 0, the proxy's default, matches creates
	// without one. Without Network TTL is ignored.
	Network bool          `json:"network,omitempty"`
	TTL     time.Duration `json:"ttl,omitempty"`
	// Min members are kept ready; a claim that finds none ready or takes the
	// last one doubles the pool's size, up to Max (default Min): a burst that
	// drains the pool raises it. After Idle without such a claim (default 1
	// minute) the size halves, down to Min.
	Min  int           `json:"min"`
	Max  int           `json:"max,omitempty"`
	Idle time.Duration `json:"idle,omitempty"`
}

// PoolStat is a pool's state, for metrics and tests.
type PoolStat struct {
	Pool     Pool
	Ready    int // members waiting to be claimed
	Starting int
	Size     int // what the pool fills up to now, Min to Max
	// Claims and Misses count creates of the pool's shape served by a member
	// and started cold; Started, Died and Failed count members started, dead
	// before a claim (replaced) and starts that failed.
	Claims, Misses, Started, Died, Failed int
	Err                                   string // the last failed start's error
}

// shape is what a sandbox is started with: two creates of one shape get
// sandboxes in the same state.
type shape struct {
	template, preset, lower string
	limits                  Limits
	network                 bool
	caLife                  time.Duration
	mounts                  bool // never pooled
	isolation               runner.Isolation
	layer                   string // LayerMemory or LayerDisk
}

// shapeOf is o's shape, with lower its resolved lower layer, lim its limits
// with the defaults and ttl its TTL.
func shapeOf(o CreateOptions, lower string, lim Limits, ttl time.Duration) shape {
	k := shape{template: o.Template, preset: o.Preset, lower: lower, limits: lim, network: o.Network != nil, mounts: len(o.Mounts) > 0, isolation: o.Isolation}
	if k.isolation == "" {
		k.isolation = runner.IsolationNamespace
	}
	if k.layer = o.Layer; k.layer == "" {
		k.layer = LayerMemory
	}
	if k.network && ttl > 0 {
		// The CA lives no longer than the environment may (without a TTL, the
		// proxy's default).
		k.caLife = ttl + time.Hour
	}
	return k
}

// pool is a Pool's members and counters, under Manager.mu.
type pool struct {
	cfg       Pool
	key       shape
	ready     []*environment // oldest first
	starting  int
	size      int
	lastMiss  time.Time // the last claim that drained the pool, or the last shrink
	lastClaim time.Time
	streak    time.Time // the first claim of the claims that came at most refillQuiet apart
	retryAt   time.Time // after a failed start
	backoff   time.Duration
	stat      PoolStat
}

// newPools validates the configured pools and resolves their shapes.
func (m *Manager) newPools() error {
	pools := map[shape]*pool{}
	for i, c := range m.cfg.Pools {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: pools[%d]: %s", ErrInvalid, i, fmt.Sprintf(format, args...))
		}
		if c.Max == 0 {
			c.Max = c.Min
		}
		if c.Idle == 0 {
			c.Idle = time.Minute
		}
		switch {
		case c.Min < 0 || c.Max < 0:
			return bad("min %d and max %d must not be negative", c.Min, c.Max)
		case c.Max < c.Min:
			return bad("max %d is below min %d", c.Max, c.Min)
		case c.Max == 0:
			return bad("max is 0: the pool would never hold an environment (set min or max)")
		case c.Idle < 0 || c.TTL < 0:
			return bad("idle and ttl must not be negative")
		case c.TTL > 0 && !c.Network:
			return bad("ttl is for networked pools only (their proxy's CA lives ttl+1h); remove it or set network")
		}
		o := CreateOptions{Owner: Owner{Tenant: "pool"}, Template: c.Template, Preset: c.Preset, Workspace: c.Workspace, Limits: c.Limits}
		if c.Network {
			o.Network = &Network{}
		}
		if err := validate(&o); err != nil {
			return bad("%v", err)
		}
		lower, err := m.lowerOf(o)
		if err != nil {
			return bad("%v", err)
		}
		if c.Workspace != "" {
			// As the API resolves a create's workspace (access.allowedWorkspace).
			if lower, err = filepath.EvalSymlinks(lower); err != nil {
				return bad("workspace %q: %v", c.Workspace, err)
			}
		}
		if c.Template != "" {
			img, err := m.openTemplate(c.Template)
			if err != nil {
				return bad("%v", err)
			}
			img.Close()
		}
		ttl := c.TTL
		if ttl == 0 {
			ttl = m.cfg.DefaultTTL
		}
		k := shapeOf(o, lower, m.limits(c.Limits), ttl)
		if _, dup := pools[k]; dup {
			return bad("the same shape as an earlier pool: merge them")
		}
		p := &pool{cfg: c, key: k, size: c.Min, stat: PoolStat{Pool: c}}
		pools[k] = p
		m.poolList = append(m.poolList, p)
	}
	m.pools = pools
	return nil
}

// claim takes a ready member of k's pool, nil when there is none. A claim
// that leaves none ready grows the pool. A member on another image than img (the template was rebuilt
// since it started) is not what a fresh create gets: it is destroyed.
func (m *Manager) claim(k shape, img *image.Image) *environment {
	return m.claimAt(k, img, time.Now())
}

// claimAt is claim at the time now.
func (m *Manager) claimAt(k shape, img *image.Image, now time.Time) *environment {
	m.mu.Lock()
	p := m.pools[k]
	if p == nil {
		m.mu.Unlock()
		return nil
	}
	var stale []*environment
	var e *environment
	for len(p.ready) > 0 && e == nil {
		e = p.ready[len(p.ready)-1]
		p.ready = p.ready[:len(p.ready)-1]
		if e.isDestroyed() || (img != nil && e.img.ID != img.ID) {
			stale = append(stale, e)
			e = nil
		}
	}
	if e != nil {
		p.stat.Claims++
		if now.Sub(p.lastClaim) > refillQuiet {
			p.streak = now
		}
		p.lastClaim = now
	} else {
		p.stat.Misses++
	}
	if len(p.ready) == 0 {
		p.lastMiss = now
		p.size = min(p.cfg.Max, max(2*p.size, 1))
	}
	m.mu.Unlock()
	m.wakeFiller()
	for _, s := range stale {
		m.destroy(s)
	}
	return e
}

// makeRoom destroys a ready pool member when the Manager, with the reserved
// create that calls it, is past MaxEnvironments: a create counts before the
// pools. A member still starting is dropped when it is ready (fillOne).
func (m *Manager) makeRoom() {
	if m.cfg.MaxEnvironments <= 0 {
		return
	}
	m.mu.Lock()
	if m.live() <= m.cfg.MaxEnvironments {
		m.mu.Unlock()
		return
	}
	var victim *environment
	for _, p := range m.poolList {
		if len(p.ready) > 0 {
			victim = p.ready[0]
			p.ready = p.ready[1:]
			break
		}
	}
	m.mu.Unlock()
	if victim != nil {
		m.destroy(victim)
	}
}

// live counts what holds or will soon hold a sandbox, under m.mu: the
// environments, the creates under way (reserve) and the pools' members ready
// or starting. MaxEnvironments bounds it.
func (m *Manager) live() int {
	return len(m.envs) + m.creating + m.pooled()
}

// pooled counts the members ready or starting, under m.mu.
func (m *Manager) pooled() int {
	n := 0
	for _, p := range m.pools {
		n += len(p.ready) + p.starting
	}
	return n
}

// unpool removes e from its pool if it is a ready member, under m.mu: it died
// before a claim. It reports whether it was one (the filler replaces it).
func (m *Manager) unpool(e *environment) bool {
	for _, p := range m.poolList {
		if i := slices.Index(p.ready, e); i >= 0 {
			p.ready = slices.Delete(p.ready, i, i+1)
			p.stat.Died++
			return true
		}
	}
	return false
}

// wakeFiller asks the filler to look at the pools now.
func (m *Manager) wakeFiller() {
	select {
	case m.fill <- struct{}{}:
	default:
	}
}

// refillQuiet is how long a pool waits after a claim before it refills, empty
// or not: a burst of creates is served from what is ready, and a sandbox
// started meanwhile would take the CPU that the burst's first commands need
// (measured: a refill beside a claimed environment's first exec made it 30 ms
// instead of 4; refilling a drained pool at once took one of the two cores
// from a burst of 50 first execs). Misses do not delay it: creates that keep
// finding the pool empty start cold until members are ready again. Claims that
// keep coming (one-shot runs one after another: `agentbox run --pool` in a
// loop) hold it back no longer than refillHold after the first of them, or
// every create after the first Min would start cold.
const (
	refillQuiet = 100 * time.Millisecond
	refillHold  = 500 * time.Millisecond
)

// filler keeps the pools at their size, starting members one at a time, and
// shrinks a pool idle for its Idle.
func (m *Manager) filler() {
	defer close(m.fillerDone)
	t := time.NewTicker(m.cfg.ReapInterval)
	defer t.Stop()
	var later <-chan time.Time
	for first := true; ; first = false {
		if !first {
			select {
			case <-m.stop:
				return
			case <-m.fill:
			case <-later:
			case <-t.C:
			}
		}
		m.shrink(time.Now())
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			p, wait := m.nextToFill(time.Now())
			if p == nil {
				later = nil
				if wait > 0 {
					later = time.After(wait)
				}
				break
			}
			m.fillOne(p)
		}
	}
}

// nextToFill picks a pool below its size and counts the member it will start;
// with none, it says how long until one that waits for quiet may be filled.
func (m *Manager) nextToFill(now time.Time) (*pool, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, 0
	}
	var wait time.Duration
	for _, p := range m.poolList {
		if len(p.ready)+p.starting >= p.size || now.Before(p.retryAt) {
			continue
		}
		if c := m.cfg.MaxEnvironments; c > 0 && m.live() >= c {
			return nil, 0
		}
		quiet := p.lastClaim.Add(refillQuiet)
		if hold := p.streak.Add(refillHold); hold.Before(quiet) {
			quiet = hold
		}
		if now.Before(quiet) {
			if w := quiet.Sub(now); wait == 0 || w < wait {
				wait = w
			}
			continue
		}
		p.starting++
		return p, 0
	}
	return nil, wait
}

// fillOne starts a member of p.
func (m *Manager) fillOne(p *pool) {
	var img *image.Image
	var err error
	if p.cfg.Template != "" {
		img, err = m.openTemplate(p.cfg.Template)
	}
	var e *environment
	if err == nil {
		e, err = m.start(p.key, img, nil, nil, nil)
	}
	m.mu.Lock()
	p.starting--
	if err != nil {
		p.stat.Failed++
		p.stat.Err = err.Error()
		p.backoff = min(max(2*p.backoff, time.Second), time.Minute)
		p.retryAt = time.Now().Add(p.backoff)
		m.mu.Unlock()
		return
	}
	p.backoff = 0
	p.stat.Started++
	// A create that came while the member started counts before it.
	drop := m.closed || (m.cfg.MaxEnvironments > 0 && m.live() >= m.cfg.MaxEnvironments)
	if !drop {
		p.ready = append(p.ready, e)
	}
	m.mu.Unlock()
	if drop || e.isDestroyed() {
		m.destroy(e)
	}
}

// shrink halves each pool not drained for its Idle, down to Min, and
// destroys the members past its size, oldest first.
func (m *Manager) shrink(now time.Time) {
	var surplus []*environment
	m.mu.Lock()
	for _, p := range m.pools {
		if p.size > p.cfg.Min && now.Sub(p.lastMiss) > p.cfg.Idle {
			p.size = max(p.cfg.Min, p.size/2)
			p.lastMiss = now
		}
		if n := len(p.ready) - p.size; n > 0 {
			surplus = append(surplus, p.ready[:n]...)
			p.ready = slices.Delete(p.ready, 0, n)
		}
	}
	m.mu.Unlock()
	for _, e := range surplus {
		m.destroy(e)
	}
}

// PoolStats describes the pools, in the order of Config.Pools.
func (m *Manager) PoolStats() []PoolStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PoolStat
	for _, p := range m.poolList {
		s := p.stat
		s.Ready, s.Starting, s.Size = len(p.ready), p.starting, p.size
		out = append(out, s)
	}
	return out
}
