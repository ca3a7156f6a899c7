package wire

import (
	"context"
	"net/netip"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
)

// network converts a wire network policy (nil stays nil). Secrets cannot come this
// way: their values would travel through the API.
func network(n *client.Network) (*env.Network, error) {
	if n == nil {
		return nil, nil
	}
	out := &env.Network{Allow: n.Allow, MaxConns: n.MaxConns, MaxBytes: n.MaxBytes}
	if out.Allow == nil {
		out.Allow = []string{}
	}
	if n.MaxConns < 0 || n.MaxBytes < 0 {
		return nil, BadRequest("network limits must not be negative")
	}
	for _, c := range n.AllowPrivate {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, BadRequest("network.allow_private %q: want a CIDR prefix such as 10.1.0.0/16", c)
		}
		out.AllowPrivate = append(out.AllowPrivate, p)
	}
	for name, ip := range n.DNSOverride {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, BadRequest("network.dns_override[%q] %q: want an IP address", name, ip)
		}
		if out.DNSOverride == nil {
			out.DNSOverride = map[string]netip.Addr{}
		}
		out.DNSOverride[name] = a
	}
	return out, nil
}

// wireNetwork is the policy in force as the API shows it (nil stays nil; secrets
// are not shown).
func wireNetwork(n *env.Network) *client.Network {
	if n == nil {
		return nil
	}
	out := &client.Network{Allow: n.Allow, MaxConns: n.MaxConns, MaxBytes: n.MaxBytes}
	for _, p := range n.AllowPrivate {
		out.AllowPrivate = append(out.AllowPrivate, p.String())
	}
	for name, a := range n.DNSOverride {
		if out.DNSOverride == nil {
			out.DNSOverride = map[string]string{}
		}
		out.DNSOverride[name] = a.String()
	}
	return out
}

func networkEvent(e egress.Event) client.NetworkEvent {
	ne := client.NetworkEvent{Seq: e.Seq, Time: e.Time, Proto: e.Proto, Host: e.Host, Port: e.Port,
		Decision: string(e.Decision), Reason: string(e.Reason), Detail: e.Detail, Intercepted: e.Intercepted,
		BytesUp: e.BytesUp, BytesDown: e.BytesDown, DurationNS: int64(e.Duration)}
	if e.Addr.IsValid() {
		ne.Addr = e.Addr.String()
	}
	return ne
}

// networkEvents converts a connection list (nil stays nil).
func networkEvents(evs []egress.Event) []client.NetworkEvent {
	if evs == nil {
		return nil
	}
	out := make([]client.NetworkEvent, 0, len(evs))
	for _, e := range evs {
		out = append(out, networkEvent(e))
	}
	return out
}

func (s *Service) SetNetwork(ctx context.Context, id string, n client.Network) error {
	en, err := network(&n)
	if err != nil {
		return err
	}
	return s.svc.SetNetwork(ctx, none, id, *en)
}

func (s *Service) NetworkLog(ctx context.Context, id string, after uint64) ([]client.NetworkEvent, error) {
	evs, err := s.svc.NetworkLog(ctx, none, id, after)
	return append([]client.NetworkEvent{}, networkEvents(evs)...), err
}

// NetworkEvents relays the environment's connections after the seq after, until the
// environment is destroyed (the channel closes) or ctx ends.
func (s *Service) NetworkEvents(ctx context.Context, id string, after uint64) (<-chan client.NetworkEvent, error) {
	ch, err := s.svc.NetworkEvents(ctx, none, id, after)
	if err != nil {
		return nil, err
	}
	out := make(chan client.NetworkEvent, cap(ch))
	go func() {
		defer close(out)
		for e := range ch {
			select {
			case out <- networkEvent(e):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
