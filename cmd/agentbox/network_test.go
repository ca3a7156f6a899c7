package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/egress"
)

// TestNetworkFlags: run's network flags build the policy they say, and every
// misuse is an error naming the flag, never a wider policy: an empty or
// over-broad allowlist, shaping flags without --allow-host (which would otherwise
// leave the run without a network silently, or read as "allow all"), a secret
// whose value agentbox does not have.
func TestNetworkFlags(t *testing.T) {
	env := map[string]string{"TOKEN": "real-value"}
	getenv := func(k string) string { return env[k] }
	parse := func(args ...string) (*egress.Policy, error) {
		var n networkFlags
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		n.add(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		return n.policy(getenv)
	}
	if p, err := parse(); p != nil || err != nil {
		t.Errorf("no flags: %+v, %v; want no network", p, err)
	}
	p, err := parse("--allow-host", "Example.COM.", "--allow-host", "preset:npm", "--allow-private", "10.1.0.0/16",
		"--dns-override", "reg.internal=10.1.2.3", "--secret", "TOKEN@example.com", "--secret", "TOKEN@*.example.com",
		"--net-max-conns", "5", "--net-max-bytes", "1M")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Allow) != 2 || len(p.AllowPrivate) != 1 || p.DNSOverride["reg.internal"].String() != "10.1.2.3" ||
		p.Limits.MaxConns != 5 || p.Limits.MaxBytes != 1<<20 {
		t.Errorf("policy %+v", p)
	}
	if len(p.Secrets) != 1 || p.Secrets[0].Value != "real-value" || len(p.Secrets[0].Hosts) != 2 ||
		!strings.HasPrefix(p.Secrets[0].Placeholder, "agentbox-secret-TOKEN-") {
		t.Errorf("secrets %+v", p.Secrets)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"empty host":            {[]string{"--allow-host", ""}, "--allow-host"},
		"star":                  {[]string{"--allow-host", "*"}, "--allow-host"},
		"public suffix":         {[]string{"--allow-host", "*.com"}, "--allow-host"},
		"NUL":                   {[]string{"--allow-host", "example.com\x00.evil.test"}, "--allow-host"},
		"IP literal":            {[]string{"--allow-host", "10.1.2.3"}, "--allow-host"},
		"no such preset":        {[]string{"--allow-host", "preset:cargo"}, "--allow-host"},
		"private alone":         {[]string{"--allow-private", "10.0.0.0/8"}, "give --allow-host too"},
		"dns alone":             {[]string{"--dns-override", "a.test=10.1.2.3"}, "give --allow-host too"},
		"secret alone":          {[]string{"--secret", "TOKEN@example.com"}, "give --allow-host too"},
		"limits alone":          {[]string{"--net-max-conns", "3"}, "give --allow-host too"},
		"private not a prefix":  {[]string{"--allow-host", "a.test", "--allow-private", "10.1.2.3"}, "--allow-private"},
		"dns not an address":    {[]string{"--allow-host", "a.test", "--dns-override", "a.test=a.test"}, "--dns-override"},
		"dns no name":           {[]string{"--allow-host", "a.test", "--dns-override", "10.1.2.3"}, "--dns-override"},
		"secret without value":  {[]string{"--allow-host", "a.test", "--secret", "UNSET@a.test"}, "not set in agentbox's environment"},
		"secret without host":   {[]string{"--allow-host", "a.test", "--secret", "TOKEN"}, "NAME@HOSTPATTERN"},
		"secret bad host":       {[]string{"--allow-host", "a.test", "--secret", "TOKEN@*"}, "--secret"},
		"secret name lowercase": {[]string{"--allow-host", "a.test", "--secret", "to ken@a.test"}, "--secret"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := parse(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: policy %+v, error %v; want an error naming %q", tc.args, p, err, tc.want)
			}
		})
	}
}
