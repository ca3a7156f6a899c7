package egress

import (
	"net/netip"
	"sync"
	"time"
)

// Decision is what the proxy did with a connection.
type Decision string

const (
	Allowed Decision = "allow"
	Denied  Decision = "deny"
)

// Reason says why a connection was refused or, for an allowed one, why the proxy cut
// it. Allowed connections that ended by themselves have none.
type Reason string

const (
	ReasonBadRequest       Reason = "bad_request"         // not a proxy request the proxy speaks
	ReasonBadHost          Reason = "bad_host"            // the host is not a valid name (ErrBadHost)
	ReasonIPLiteral        Reason = "ip_literal"          // the host is an IP address (LiteralError)
	ReasonNotAllowed       Reason = "not_allowed"         // the name is in no Allow pattern
	ReasonPolicyInvalid    Reason = "policy_invalid"      // the last SetPolicy failed: everything is refused
	ReasonResolveFailed    Reason = "resolve_failed"      // no address for the name
	ReasonAddressRefused   Reason = "address_refused"     // an answer is a special-purpose address (CheckAddr)
	ReasonProxyItself      Reason = "proxy_itself"        // the answer is one of the proxy's own listeners
	ReasonDialFailed       Reason = "dial_failed"         // no answer accepted the connection
	ReasonHostMismatch     Reason = "host_mismatch"       // Host header and request target disagree
	ReasonNotTLS           Reason = "not_tls"             // a CONNECT tunnel did not begin with a TLS ClientHello
	ReasonNoSNI            Reason = "no_sni"              // the ClientHello names no server
	ReasonSNIMismatch      Reason = "sni_mismatch"        // the ClientHello names another server than CONNECT
	ReasonUpstreamTLS      Reason = "upstream_tls"        // an intercepted host's certificate did not verify
	ReasonSecretElsewhere  Reason = "secret_elsewhere"    // a placeholder toward a host its secret is not for
	ReasonSecretPlainHTTP  Reason = "secret_plain_http"   // a placeholder toward its host over plain HTTP
	ReasonSecretInRequest  Reason = "secret_in_request"   // Scan found a secret in what the request sends
	ReasonScanBodyTooLarge Reason = "scan_body_too_large" // Scan: a body over Scan.MaxBody, refused unread
	ReasonConnLimit        Reason = "conn_limit"          // Limits.MaxConns reached
	ReasonByteLimit        Reason = "byte_limit"          // Limits.MaxBytes reached
	ReasonPolicyChanged    Reason = "policy_changed"      // SetPolicy no longer allows the open connection
	ReasonProxyClosed      Reason = "proxy_closed"        // Close
	ReasonInternal         Reason = "internal_error"      // a bug, recovered: the connection is dropped
)

// Event records one connection through the proxy: a CONNECT tunnel, or one plain
// HTTP request (each gets its own upstream connection). It never holds a header,
// a URL path or a secret.
type Event struct {
	Seq      uint64     `json:"seq"`
	Time     time.Time  `json:"time"`  // when the request arrived
	Proto    string     `json:"proto"` // "connect" or "http"
	Host     string     `json:"host"`  // canonical, or the raw request host quoted and clipped if invalid
	Port     uint16     `json:"port,omitempty"`
	Addr     netip.Addr `json:"addr,omitzero"` // the address connected to, or the one refused
	Decision Decision   `json:"decision"`
	Reason   Reason     `json:"reason,omitempty"`
	Detail   string     `json:"detail,omitempty"`
	// Intercepted is set for a tunnel whose TLS the proxy terminated to inject a
	// secret.
	Intercepted bool          `json:"intercepted,omitempty"`
	BytesUp     int64         `json:"bytes_up"`   // to the destination
	BytesDown   int64         `json:"bytes_down"` // from the destination
	Duration    time.Duration `json:"duration_ns"`
}

// eventLog is a bounded ring of events and the callback that streams them.
type eventLog struct {
	mu   sync.Mutex
	ring []Event
	next int
	n    int
	seq  uint64
	on   func(Event)
}

func newEventLog(size int, on func(Event)) *eventLog {
	return &eventLog{ring: make([]Event, size), on: on}
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	l.ring[l.next] = e
	l.next = (l.next + 1) % len(l.ring)
	l.n = min(l.n+1, len(l.ring))
	if l.on != nil {
		l.on(e)
	}
}

func (l *eventLog) events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Event, 0, l.n)
	for i := range l.n {
		out = append(out, l.ring[(l.next-l.n+i+len(l.ring))%len(l.ring)])
	}
	return out
}
