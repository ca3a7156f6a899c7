package main

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
)

// networkFlags are the egress flags of run (and of the other commands that give a
// sandbox a network): an allowlist, the operator's escape hatches, secrets, limits.
type networkFlags struct {
	allow, private, dns, secrets []string
	maxConns                     int64
	maxBytes                     int64
	scan                         bool
}

func (n *networkFlags) add(f *pflag.FlagSet) {
	n.addHosts(f)
	n.addSecrets(f)
	n.addLimits(f)
}

// addSecrets adds --secret (for sandboxes this process runs: the values come from
// its own environment) and --scan-egress.
func (n *networkFlags) addSecrets(f *pflag.FlagSet) {
	f.StringArrayVar(&n.secrets, "secret", nil, "NAME@HOSTPATTERN: the sandbox's $NAME is a placeholder the proxy replaces, in request headers to matching hosts only, by agentbox's own $NAME (repeatable)")
	f.BoolVar(&n.scan, "scan-egress", false, "the proxy reads every request from the start (HTTPS too, intercepted with the sandbox's CA) and refuses one carrying a secret's shape; "+
		"agentbox agent turns this on by itself once the session has read a secret")
}

// addLimits adds the flags that bound the sandbox's traffic.
func (n *networkFlags) addLimits(f *pflag.FlagSet) {
	f.Var(countValue{&n.maxConns}, "net-max-conns", fmt.Sprintf("open connections the sandbox may hold through the proxy (default %d)", egress.DefaultMaxConns))
	f.Var(sizeValue{&n.maxBytes}, "net-max-bytes", "bytes the proxy carries for the sandbox, both ways, after which it cuts every connection (default: no bound)")
}

// addHosts adds the flags that say what may be reached.
func (n *networkFlags) addHosts(f *pflag.FlagSet) {
	f.StringArrayVar(&n.allow, "allow-host", nil, "host the sandbox may reach through its egress proxy: NAME, *.SUFFIX, either with :PORT, or preset:"+
		strings.Join(egress.Presets(), ", preset:")+" (repeatable; without it the sandbox has no network)")
	f.StringArrayVar(&n.private, "allow-private", nil, "CIDR prefix of private addresses the allowed hosts may resolve to, e.g. a LAN registry's (repeatable)")
	f.StringArrayVar(&n.dns, "dns-override", nil, "NAME=IP: the proxy resolves NAME to IP instead of asking DNS (repeatable)")
}

// wire is the policy of addHosts's and addLimits's flags as an environment's
// network, or nil when none was given. The server checks it again, against the tenant's bound.
func (n *networkFlags) wire() (*client.Network, error) {
	p, err := n.policy(func(string) string { return "" })
	if p == nil || err != nil {
		return nil, err
	}
	out := &client.Network{Allow: p.Allow, MaxConns: p.Limits.MaxConns, MaxBytes: p.Limits.MaxBytes}
	for _, pfx := range p.AllowPrivate {
		out.AllowPrivate = append(out.AllowPrivate, pfx.String())
	}
	for name, a := range p.DNSOverride {
		if out.DNSOverride == nil {
			out.DNSOverride = map[string]string{}
		}
		out.DNSOverride[name] = a.String()
	}
	return out, nil
}

// envNetwork is the flags as a local environment's network, or nil; secret values
// come from getenv.
func (n *networkFlags) envNetwork(getenv func(string) string) (*env.Network, error) {
	p, err := n.policy(getenv)
	if p == nil || err != nil {
		return nil, err
	}
	return &env.Network{Allow: p.Allow, AllowPrivate: p.AllowPrivate, DNSOverride: p.DNSOverride,
		MaxConns: p.Limits.MaxConns, MaxBytes: p.Limits.MaxBytes, Secrets: p.Secrets, Scan: p.Scan}, nil
}

// set reports whether any network flag was given.
func (n *networkFlags) set() bool {
	return len(n.allow)+len(n.private)+len(n.dns)+len(n.secrets) > 0 || n.maxConns != 0 || n.maxBytes != 0 || n.scan
}

// policy builds the egress policy the flags describe, or nil when none was given.
// Secret values are read from getenv (agentbox's own environment): they never
// reach the sandbox, which gets a placeholder.
func (n *networkFlags) policy(getenv func(string) string) (*egress.Policy, error) {
	if !n.set() {
		return nil, nil
	}
	if len(n.allow) == 0 {
		return nil, errors.New("--allow-private, --dns-override, --secret, --scan-egress and --net-max-* shape what --allow-host allows: give --allow-host too (without it the sandbox has no network)")
	}
	p := &egress.Policy{Limits: egress.Limits{MaxConns: int(n.maxConns), MaxBytes: n.maxBytes}, Scan: egress.Scan{On: n.scan}}
	for _, a := range n.allow {
		if err := (egress.Policy{Allow: []string{a}}).Validate(); err != nil {
			return nil, fmt.Errorf("--allow-host %q: %w", a, unwrapPolicy(err))
		}
		p.Allow = append(p.Allow, a)
	}
	for _, c := range n.private {
		pfx, err := netip.ParsePrefix(c)
		if err == nil {
			err = (egress.Policy{AllowPrivate: []netip.Prefix{pfx}}).Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("--allow-private %q: %w (want a prefix such as 10.1.0.0/16)", c, unwrapPolicy(err))
		}
		p.AllowPrivate = append(p.AllowPrivate, pfx)
	}
	for _, kv := range n.dns {
		name, ip, ok := strings.Cut(kv, "=")
		a, err := netip.ParseAddr(ip)
		if !ok || err != nil {
			return nil, fmt.Errorf("--dns-override %q: use NAME=IP, as in registry.internal=10.1.2.3", kv)
		}
		if p.DNSOverride == nil {
			p.DNSOverride = map[string]netip.Addr{}
		}
		p.DNSOverride[name] = a
		if err := (egress.Policy{DNSOverride: p.DNSOverride}).Validate(); err != nil {
			return nil, fmt.Errorf("--dns-override %q: %w", kv, unwrapPolicy(err))
		}
	}
	for _, s := range n.secrets {
		name, host, ok := strings.Cut(s, "@")
		if !ok || name == "" || host == "" {
			return nil, fmt.Errorf("--secret %q: use NAME@HOSTPATTERN, as in NPM_TOKEN@registry.npmjs.org", s)
		}
		if i := slices.IndexFunc(p.Secrets, func(x egress.Secret) bool { return x.Name == name }); i >= 0 {
			p.Secrets[i].Hosts = append(p.Secrets[i].Hosts, host)
			continue
		}
		value := getenv(name)
		if value == "" {
			return nil, fmt.Errorf("--secret %q: $%s is not set in agentbox's environment (the value comes from there, never from the sandbox)", s, name)
		}
		sec, err := egress.NewSecret(name, value, host)
		if err != nil {
			return nil, fmt.Errorf("--secret %q: %w", s, err)
		}
		p.Secrets = append(p.Secrets, sec)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("network flags: %w", err)
	}
	return p, nil
}

// unwrapPolicy drops the policy's field name, which the flag's name replaces.
func unwrapPolicy(err error) error {
	var pe *egress.PolicyError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
