package access

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
)

// withinBound checks an environment's network against its tenant's bound
// (config.Tenant.Network): without one, a tenant's environments get no network.
func (g *Guard) withinBound(tenant string, n *env.Network) error {
	if n == nil {
		return nil
	}
	b := g.cfg.Tenants[tenant].Network
	switch {
	case b == nil:
		return fmt.Errorf("%w: this tenant's environments may have no network (the server's configuration gives it no network bound)", ErrForbidden)
	case b.Any:
		return nil
	}
	p := egress.Policy{Allow: n.Allow, AllowPrivate: n.AllowPrivate, DNSOverride: n.DNSOverride}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: network: %w", env.ErrInvalid, err)
	}
	if err := p.Within(b.Policy()); err != nil {
		return fmt.Errorf("%w: network: %w (the tenant may allow %v)", ErrForbidden, err, slices.Sorted(slices.Values(b.Allow)))
	}
	return nil
}

func (g *Guard) SetNetwork(ctx context.Context, _ env.Owner, id string, n env.Network) error {
	o, err := g.owner(ctx, config.ScopeEnvCreate)
	if err != nil {
		return err
	}
	if err := g.withinBound(o.Tenant, &n); err != nil {
		return err
	}
	return g.svc.SetNetwork(ctx, o, id, n)
}

func (g *Guard) NetworkLog(ctx context.Context, _ env.Owner, id string, after uint64) ([]egress.Event, error) {
	o, err := g.owner(ctx)
	if err != nil {
		return nil, err
	}
	return g.svc.NetworkLog(ctx, o, id, after)
}

func (g *Guard) NetworkEvents(ctx context.Context, _ env.Owner, id string, after uint64) (<-chan egress.Event, error) {
	o, err := g.owner(ctx)
	if err != nil {
		return nil, err
	}
	return g.svc.NetworkEvents(ctx, o, id, after)
}
