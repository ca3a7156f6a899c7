package runner

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// TestNamespaceNetwork: a run with Sandbox.Network reaches the allowed name through
// its proxy and is refused another; Result.Network lists both connections with
// their addresses, decisions and bytes, in the --json form. A run without one has
// no "network" in its JSON at all.
func TestNamespaceNetwork(t *testing.T) {
	h := nethost.New(t)
	o := nethost.StartOrigin(t, h, "origin.test")
	pol := &egress.Policy{
		Allow:        []string{"origin.test"},
		AllowPrivate: []netip.Prefix{h.Prefix},
		DNSOverride:  map[string]netip.Addr{"origin.test": h.Addr, "other.test": h.Addr},
	}
	script := fmt.Sprintf(`curl -sS --max-time 30 http://origin.test:%[1]d/in; echo " in=$?"
curl -sS --max-time 30 http://other.test:%[1]d/out; echo " out=$?"`, o.HTTP.Port())
	start := time.Now()
	res := runNS(t, Spec{Argv: []string{"/bin/sh", "-c", script}, Sandbox: SandboxOptions{Network: pol}})
	for _, want := range []string{fmt.Sprintf("origin origin.test:%d /in in=0", o.HTTP.Port()), "not_allowed: other.test"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s%s", want, res.Stdout, res.Stderr)
		}
	}
	if len(res.Network) != 2 {
		t.Fatalf("Result.Network = %+v, want 2 connections", res.Network)
	}
	in, out := res.Network[0], res.Network[1]
	if in.Host != "origin.test" || in.Port != o.HTTP.Port() || in.Addr != h.Addr || in.Decision != egress.Allowed ||
		in.BytesUp == 0 || in.BytesDown == 0 || in.Time.Before(start) {
		t.Errorf("allowed connection recorded as %+v", in)
	}
	if out.Host != "other.test" || out.Decision != egress.Denied || out.Reason != egress.ReasonNotAllowed || out.BytesUp != 0 {
		t.Errorf("refused connection recorded as %+v", out)
	}
	j, _ := json.Marshal(res)
	if !strings.Contains(string(j), `"network":[{"seq":1,`) {
		t.Errorf("--json lacks the network log: %s", j)
	}
	if got := o.Requests(); len(got) != 1 || got[0].Path != "/in" {
		t.Errorf("origin received %+v, want /in only", got)
	}

	res = runNS(t, Spec{Argv: []string{"/bin/true"}})
	if j, _ := json.Marshal(res); strings.Contains(string(j), `"network"`) {
		t.Errorf("a run without a network has a network log: %s", j)
	}
}
