package env

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/egress"
)

// Network is what an environment may reach: its sandbox's one way out is an egress
// proxy on the host with this policy (package egress; sandbox.Network). An empty
// Allow reaches nothing.
type Network struct {
	Allow        []string              `json:"allow"`
	AllowPrivate []netip.Prefix        `json:"allow_private,omitempty"`
	DNSOverride  map[string]netip.Addr `json:"dns_override,omitempty"`
	// MaxConns and MaxBytes bound the environment's open connections and the
	// bytes its proxy carries over its life (egress.Limits; 0: the defaults).
	MaxConns int   `json:"max_conns,omitempty"`
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Secrets are injected by the proxy into requests to their hosts; every
	// command gets each one's placeholder in its environment under its name.
	// They are set at Create by an in-process caller (agentbox agent --secret):
	// the API takes none (their values would travel through it), and SetNetwork
	// keeps them. Values never appear in Info's JSON.
	Secrets []egress.Secret `json:"secrets,omitempty"`
	// Scan makes the proxy read every request and refuse one carrying a secret
	// (egress.Scan); every TLS tunnel is then intercepted. Its Values come from an
	// in-process caller only (an agent session's taint) and, once given, are kept
	// by every later SetNetwork.
	Scan egress.Scan `json:"scan,omitzero"`
}

// policy is n as the proxy's policy.
func (n *Network) policy() egress.Policy {
	return egress.Policy{Allow: n.Allow, AllowPrivate: n.AllowPrivate, DNSOverride: n.DNSOverride,
		Secrets: n.Secrets, Limits: egress.Limits{MaxConns: n.MaxConns, MaxBytes: n.MaxBytes}, Scan: n.Scan}
}

// check validates n, naming the entry that is wrong.
func (n *Network) check() error {
	if err := n.policy().Validate(); err != nil {
		return fmt.Errorf("%w: network: %w", ErrInvalid, err)
	}
	return nil
}

// placeholders returns env with each secret's NAME=placeholder added; a request
// that sets one of those names itself is refused (its value would shadow the
// placeholder, or the placeholder it).
func (e *environment) placeholders(env []string) ([]string, error) {
	e.mu.Lock()
	n := e.info.Network
	e.mu.Unlock()
	if n == nil || len(n.Secrets) == 0 {
		return env, nil
	}
	out := slices.Clip(env)
	for _, s := range n.Secrets {
		for _, kv := range env {
			if k, _, _ := strings.Cut(kv, "="); k == s.Name {
				return nil, fmt.Errorf("%w: env %s: the environment holds a secret of that name, whose placeholder is the variable's value", ErrInvalid, k)
			}
		}
		out = append(out, s.Name+"="+s.Placeholder)
	}
	return out, nil
}

// maxNetworkEvents bounds the connections an environment's log keeps (the oldest go).
const maxNetworkEvents = 10000

// SetNetwork replaces the environment's network policy. It takes effect at once: new
// connections and requests follow it, open connections it no longer allows are
// cut. An environment created without a network has no proxy, and gets none. The
// secrets, the scan's values and a scan that is on (with its body bound unless n
// gives one) are kept whatever n says.
func (m *Manager) SetNetwork(ctx context.Context, owner Owner, id string, n Network) error {
	if err := n.check(); err != nil {
		return err
	}
	e, done, err := m.use(owner, id)
	if err != nil {
		return err
	}
	defer done()
	if e.proxy == nil {
		return fmt.Errorf("%w: environment %s was created without a network; create one with network set", ErrInvalid, id)
	}
	if err := e.setNetwork(n); err != nil {
		return err
	}
	return e.saveRecord()
}

// setNetwork is SetNetwork's change, under e.mu.
func (e *environment) setNetwork(n Network) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n.Secrets = e.info.Network.Secrets // the placeholders are in the commands' environments
	// Scanning only ever goes on: once a session turned it on (its data is
	// tainted), no later policy, from the API or anyone, sends unread again.
	if old := e.info.Network.Scan; old.On {
		n.Scan.On = true
		if n.Scan.MaxBody == 0 {
			n.Scan.MaxBody = old.MaxBody
		}
	}
	for _, v := range e.info.Network.Scan.Values {
		if !slices.Contains(n.Scan.Values, v) {
			n.Scan.Values = append(slices.Clip(n.Scan.Values), v)
		}
	}
	if err := e.proxy.SetPolicy(n.policy()); err != nil {
		// Validated above, so this is a bug; the proxy now refuses everything.
		return fmt.Errorf("env: set network: %w", err)
	}
	e.info.Network = &n
	return nil
}

// NetworkLog returns the environment's connections with a seq above after, oldest
// first: every connection through its proxy that has ended (a gap in seq says
// the oldest were dropped).
func (m *Manager) NetworkLog(ctx context.Context, owner Owner, id string, after uint64) ([]egress.Event, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return nil, err
	}
	defer done()
	if e.proxy == nil {
		return nil, fmt.Errorf("%w: environment %s has no network", ErrInvalid, id)
	}
	out := []egress.Event{}
	for _, ev := range e.proxy.Log() {
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, nil
}

// netNotify wakes NetworkEvents' streams. It runs under the proxy's log lock, so
// it only signals.
func (e *environment) netNotify() {
	e.netMu.Lock()
	close(e.netChanged)
	e.netChanged = make(chan struct{})
	e.netMu.Unlock()
}

// NetworkEvents streams the environment's connections with a seq above after: those
// its log holds, then each one as it ends, until ctx ends or the environment is
// destroyed (then the channel closes). A gap in seq says the log dropped the
// oldest before they were sent.
func (m *Manager) NetworkEvents(ctx context.Context, owner Owner, id string, after uint64) (<-chan egress.Event, error) {
	e, err := m.lookup(owner, id)
	if err != nil {
		return nil, err
	}
	if err := e.begin(); err != nil {
		return nil, err
	}
	e.end() // a stream of connections is not activity: it does not keep the environment from idling
	if e.proxy == nil {
		return nil, fmt.Errorf("%w: environment %s has no network", ErrInvalid, id)
	}
	ch := make(chan egress.Event, 16)
	go func() {
		defer close(ch)
		next := after
		for {
			e.netMu.Lock()
			changed := e.netChanged
			e.netMu.Unlock()
			for _, ev := range e.proxy.Log() {
				if ev.Seq <= next {
					continue
				}
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				case <-e.ctx.Done():
					return
				}
				next = ev.Seq
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-e.ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
