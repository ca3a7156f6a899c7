package grade

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// TestSetupNetwork: a task's network (task.yaml network:) is its setup's, and only
// its setup's. Setup fetches a file from a test host through the environment's
// proxy; the test command, which runs the tests only if the file is there and the
// same host is now refused, resolves the task; the host saw setup's request alone.
func TestSetupNetwork(t *testing.T) {
	m := envtest.New(t)
	h := nethost.New(t)
	o := nethost.StartOrigin(t, h, "origin.test")
	tk := *builtin(t, "C02")
	url := fmt.Sprintf("http://origin.test:%d", o.HTTP.Port())
	tk.Setup = []string{"curl", "-sSf", "--max-time", "30", "-o", "fetched.txt", url + "/setup"}
	tk.Network = &egress.Policy{Allow: []string{"origin.test"}, AllowPrivate: []netip.Prefix{h.Prefix},
		DNSOverride: map[string]netip.Addr{"origin.test": h.Addr}}
	tk.TestCommand = []string{"sh", "-c", "grep -q 'origin origin.test' fetched.txt && ! curl -sf --max-time 10 " + url + "/test && exec " +
		strings.Join(tk.TestCommand, " ")}
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	if v := gradeIt(t, m, &tk, ref, Options{}); !v.Resolved {
		t.Errorf("the reference with a setup that fetches: %s", dump(v))
	}
	var paths []string
	for _, r := range o.Requests() {
		paths = append(paths, r.Path)
	}
	if strings.Join(paths, " ") != "/setup" {
		t.Errorf("the test host received %v, want /setup only", paths)
	}
}
