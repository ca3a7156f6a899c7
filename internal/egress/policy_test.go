package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

// TestZeroPolicyDeniesAll: the empty allowlist is "deny all" (a peer's was "allow
// all").
func TestZeroPolicyDeniesAll(t *testing.T) {
	r, err := compile(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"example.com", "localhost", "a"} {
		if r.allowed(h, 443) {
			t.Errorf("the zero policy allows %s", h)
		}
	}
	if r.maxConns != DefaultMaxConns {
		t.Errorf("maxConns %d", r.maxConns)
	}
	if denyAll(errors.New("x")).allowed("example.com", 443) {
		t.Error("denyAll allows")
	}
}

func TestPresets(t *testing.T) {
	r, err := compile(Policy{Allow: []string{"preset:npm", "preset:go", "preset:pypi", "preset:debian"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, hp := range []struct {
		host string
		port uint16
	}{{"registry.npmjs.org", 443}, {"proxy.golang.org", 443}, {"sum.golang.org", 443},
		{"pypi.org", 443}, {"files.pythonhosted.org", 443}, {"deb.debian.org", 80},
		{"deb.debian.org", 443}, {"security.debian.org", 80}} {
		if !r.allowed(hp.host, hp.port) {
			t.Errorf("presets do not allow %s:%d", hp.host, hp.port)
		}
	}
	for _, hp := range []struct {
		host string
		port uint16
	}{{"registry.npmjs.org", 80}, {"npmjs.org", 443}, {"evil.golang.org", 443}, {"pypi.org", 22}} {
		if r.allowed(hp.host, hp.port) {
			t.Errorf("presets allow %s:%d", hp.host, hp.port)
		}
	}
	if err := (Policy{Allow: []string{"preset:cargo"}}).Validate(); err == nil || !strings.Contains(err.Error(), "debian, go, npm, pypi") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	ph, _ := NewPlaceholder("TOKEN")
	ok := Secret{Name: "TOKEN", Hosts: []string{"api.example.com"}, Placeholder: ph, Value: "s3cr3t-value"}
	with := func(edit func(*Secret)) []Secret { s := ok; edit(&s); return []Secret{s} }
	for _, tc := range []struct {
		name  string
		p     Policy
		field string
		want  string
	}{
		{"bad allow", Policy{Allow: []string{"ok.com", "exa mple.com"}}, `allow[1] "exa mple.com"`, "byte ' '"},
		{"address in allow", Policy{Allow: []string{"10.0.0.1"}}, "allow[0]", "dns_override"},
		{"unmasked prefix", Policy{AllowPrivate: []netip.Prefix{pfx("10.1.2.3/8")}}, "allow_private[0]", "did you mean 10.0.0.0/8"},
		{"mapped prefix", Policy{AllowPrivate: []netip.Prefix{pfx("::ffff:10.0.0.0/104")}}, "allow_private[0]", "as IPv4"},
		{"invalid prefix", Policy{AllowPrivate: []netip.Prefix{{}}}, "allow_private[0]", "not a CIDR"},
		{"bad override name", Policy{DNSOverride: map[string]netip.Addr{"a b": netip.MustParseAddr("10.0.0.1")}}, `dns_override["a b"]`, "byte"},
		{"override of an address", Policy{DNSOverride: map[string]netip.Addr{"1.2.3.4": netip.MustParseAddr("10.0.0.1")}}, `dns_override["1.2.3.4"]`, "IP address"},
		{"zero override", Policy{DNSOverride: map[string]netip.Addr{"a.test": {}}}, `dns_override["a.test"]`, "not an address"},
		{"override twice", Policy{DNSOverride: map[string]netip.Addr{"A.test": netip.MustParseAddr("10.0.0.1"), "a.test": netip.MustParseAddr("10.0.0.2")}}, `dns_override["a.test"]`, "already pinned"},
		{"negative conns", Policy{Limits: Limits{MaxConns: -1}}, "limits.max_conns", "negative"},
		{"negative bytes", Policy{Limits: Limits{MaxBytes: -1}}, "limits.max_bytes", "negative"},
		{"secret name", Policy{Secrets: with(func(s *Secret) { s.Name = "a-b" })}, "secrets[0]", "letters, digits"},
		{"placeholder", Policy{Secrets: with(func(s *Secret) { s.Placeholder = "x" })}, "secrets[0]", "NewPlaceholder"},
		{"placeholder of another name", Policy{Secrets: with(func(s *Secret) { s.Name = "OTHER" })}, "secrets[0]", "agentbox-secret-OTHER-"},
		{"no value", Policy{Secrets: with(func(s *Secret) { s.Value = "" })}, "secrets[0]", "no value"},
		{"CRLF in value", Policy{Secrets: with(func(s *Secret) { s.Value = "v\r\nX-Injected: 1" })}, "secrets[0]", "CR or LF"},
		{"no host", Policy{Secrets: with(func(s *Secret) { s.Hosts = nil })}, "secrets[0]", "names no host"},
		{"bad host", Policy{Secrets: with(func(s *Secret) { s.Hosts = []string{"*"} })}, "secrets[0]", "hosts[0]"},
		{"twice", Policy{Secrets: []Secret{ok, ok}}, "secrets[1]", "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			var pe *PolicyError
			if !errors.As(err, &pe) || !strings.Contains(pe.Field, tc.field) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v; want field %s and %q", err, tc.field, tc.want)
			}
			for _, s := range tc.p.Secrets {
				if strings.Contains(err.Error(), s.Value) && s.Value != "" {
					t.Errorf("the error shows the secret's value: %v", err)
				}
			}
		})
	}
	if err := (Policy{Allow: []string{"*.example.com:443"}, Secrets: []Secret{ok}}).Validate(); err != nil {
		t.Errorf("valid policy: %v", err)
	}
}

// TestSecretRedacted: printing, logging or marshalling a policy never shows a
// secret's value.
func TestSecretRedacted(t *testing.T) {
	const value = "planted-secret-value-9f8e7d"
	ph, err := NewPlaceholder("TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Secrets: []Secret{{Name: "TOKEN", Hosts: []string{"api.example.com"}, Placeholder: ph, Value: value}}}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&out, verb+"\n", p)
		fmt.Fprintf(&out, verb+"\n", p.Secrets[0])
	}
	j, _ := json.Marshal(p)
	out.Write(j)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("policy", "secret", p.Secrets[0], "policy", p)
	slog.New(slog.NewTextHandler(&out, nil)).Info("policy", "secret", p.Secrets[0])
	if strings.Contains(out.String(), value) {
		t.Fatalf("the value is visible:\n%s", out.String())
	}
	if !strings.Contains(out.String(), ph) || !strings.Contains(out.String(), redacted) {
		t.Fatalf("placeholder or [redacted] missing:\n%s", out.String())
	}
}

func TestNewPlaceholder(t *testing.T) {
	a, err := NewPlaceholder("GITHUB_TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlaceholder("GITHUB_TOKEN")
	if a == b || !strings.HasPrefix(a, "agentbox-secret-GITHUB_TOKEN-") || len(a) != len("agentbox-secret-GITHUB_TOKEN-")+32 {
		t.Fatalf("placeholders %q %q", a, b)
	}
	if err := checkPlaceholder("GITHUB_TOKEN", a); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlaceholder("bad name"); err == nil {
		t.Fatal("bad name accepted")
	}
}
