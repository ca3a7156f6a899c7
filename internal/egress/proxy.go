package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Resolver answers the proxy's DNS questions. *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Proxy. Its zero value is a proxy that allows nothing.
type Config struct {
	// Policy is the initial policy; NewProxy fails if it is invalid.
	Policy Policy
	// Resolver resolves names DNSOverride does not pin. Default net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address. Default: a TCP net.Dialer.
	Dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// UpstreamRoots verify the certificates of intercepted hosts. Default: the
	// system roots.
	UpstreamRoots *x509.CertPool
	// OnEvent receives every Event as it is logged, in Seq order. It runs under the
	// log's lock: it must not block, nor call Log.
	OnEvent func(Event)
	// LogSize is how many events Log keeps. Default 1024.
	LogSize int
	// CALifetime is how long the sandbox's CA is valid. Default 7 days.
	CALifetime time.Duration
	// DialTimeout bounds resolving and connecting. Default 10 s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds reading a request head once it began, a ClientHello and
	// a TLS handshake. Default 10 s.
	HandshakeTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a client connection.
	// Default 2 min.
	IdleTimeout time.Duration
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("egress: proxy closed")

// Proxy is one sandbox's egress proxy: its policy, its CA, its log, its limits.
type Proxy struct {
	cfg   Config
	rules atomic.Pointer[rules]
	ca    *authority
	log   *eventLog
	bytes atomic.Int64 // carried in both directions, for Limits.MaxBytes
	conns atomic.Int64 // open client connections, for Limits.MaxConns

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]bool
	self      []netip.AddrPort // TCP listeners: never a destination
	sessions  map[*session]bool
	wg        sync.WaitGroup
}

// NewProxy returns a proxy with cfg's policy and a fresh CA. It serves nothing
// until Serve.
func NewProxy(cfg Config) (*Proxy, error) {
	r, err := compile(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	cfg.DialTimeout = orDefault(cfg.DialTimeout, 10*time.Second)
	cfg.HandshakeTimeout = orDefault(cfg.HandshakeTimeout, 10*time.Second)
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, 2*time.Minute)
	cfg.CALifetime = orDefault(cfg.CALifetime, 7*24*time.Hour)
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a.String())
		}
	}
	if cfg.LogSize <= 0 {
		cfg.LogSize = 1024
	}
	ca, err := newAuthority(cfg.CALifetime)
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, ca: ca, log: newEventLog(cfg.LogSize, cfg.OnEvent),
		listeners: map[net.Listener]bool{}, sessions: map[*session]bool{}}
	p.rules.Store(r)
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// SetPolicy replaces the policy for every new connection and request at once, and
// cuts the open connections the new policy no longer allows. An invalid policy is
// not ignored: the proxy then refuses everything (and cuts everything) until a
// valid one is set, and SetPolicy returns the validation error.
func (p *Proxy) SetPolicy(pol Policy) error {
	r, err := compile(pol)
	if err != nil {
		r = denyAll(err)
	}
	p.rules.Store(r)
	p.mu.Lock()
	open := make([]*session, 0, len(p.sessions))
	for s := range p.sessions {
		open = append(open, s)
	}
	p.mu.Unlock()
	for _, s := range open {
		s.recheck(r)
	}
	return err
}

// Log returns the events the proxy still holds, oldest first.
func (p *Proxy) Log() []Event { return p.log.events() }

// CACertPEM returns the certificate of the proxy's CA, for the sandbox's trust store.
// Only hosts that a secret is injected into see it; every other tunnel is end to end.
func (p *Proxy) CACertPEM() []byte { return append([]byte(nil), p.ca.pem...) }

// Serve accepts the sandbox's connections on l until Close, and returns ErrClosed.
// It may be called for several listeners. A TCP listener's address is never a
// destination (a request through the proxy to itself is refused).
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	p.listeners[l] = true
	if a, ok := l.Addr().(*net.TCPAddr); ok {
		p.self = append(p.self, a.AddrPort())
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() {
				return ErrClosed
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: wait for some to be closed.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !p.start(c) {
			c.Close()
			return ErrClosed
		}
	}
}

// start registers and serves one client connection; false once the proxy is closed.
func (p *Proxy) start(c net.Conn) bool {
	s := &session{p: p, client: c}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.sessions[s] = true
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			delete(p.sessions, s)
			p.mu.Unlock()
		}()
		s.serve()
	}()
	return true
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close stops every listener and cuts every connection, then waits for their
// goroutines. Afterwards nothing reaches the network through p.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for l := range p.listeners {
		l.Close()
	}
	open := make([]*session, 0, len(p.sessions))
	for s := range p.sessions {
		open = append(open, s)
	}
	p.mu.Unlock()
	for _, s := range open {
		s.cut(ReasonProxyClosed)
	}
	p.wg.Wait()
	return nil
}

// isSelf reports whether a is one of the proxy's own TCP listeners.
func (p *Proxy) isSelf(a netip.AddrPort) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.self {
		if s.Port() == a.Port() && (s.Addr().Unmap() == a.Addr() || s.Addr().IsUnspecified()) {
			return true
		}
	}
	return false
}
