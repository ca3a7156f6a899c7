package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// TestCLINetwork: an environment with a network through the daemon, by the CLI:
// env create --allow-host within the tenant's bound (and refused outside it), a
// command reaching the host by name, net log listing it, net set --deny-all
// closing it at once.
func TestCLINetwork(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	h := nethost.New(t)
	o := nethost.StartOrigin(t, h, "origin.test")
	proj := filepath.Join(d.work, "proj")
	flags := []string{"--allow-private", h.Prefix.String(), "--dns-override", "origin.test=" + h.Addr.String()}
	if _, e, st := d.cli(append([]string{"env", "create", "--workspace", proj, "--allow-host", "other.test"}, flags...)...); st != 125 ||
		!strings.Contains(e, "EPERM") || !strings.Contains(e, "other.test") {
		t.Errorf("a host outside the bound: %d %s", st, e)
	}
	out, e, st := d.cli(append([]string{"env", "create", "--workspace", proj, "--allow-host", "origin.test"}, flags...)...)
	if st != 0 {
		t.Fatalf("create: %d %s", st, e)
	}
	id := strings.TrimSpace(out)
	defer d.cli("env", "rm", id)
	url := fmt.Sprintf("http://origin.test:%d", o.HTTP.Port())
	if out, e, st := d.cli("exec", id, "--", "curl", "-sSf", "--max-time", "30", url+"/cli"); st != 0 || !strings.Contains(out, "/cli") {
		t.Fatalf("the allowed host: %d %q %s", st, out, e)
	}
	out, e, st = d.cli("net", "log", "--json", id)
	var evs []struct{ Host, Decision, Addr string }
	if err := json.Unmarshal([]byte(out), &evs); st != 0 || err != nil || len(evs) != 1 || evs[0].Host != "origin.test" ||
		evs[0].Decision != "allow" || evs[0].Addr != h.Addr.String() {
		t.Errorf("net log --json: %d %q %s", st, out, e)
	}
	if _, e, st := d.cli("net", "set", "--deny-all", id); st != 0 {
		t.Fatalf("net set --deny-all: %d %s", st, e)
	}
	if out, _, st := d.cli("exec", id, "--", "curl", "-sSf", "--max-time", "30", url+"/after"); st != 22 {
		t.Errorf("after --deny-all: exit %d %q, want curl's 22 (HTTP 403)", st, out)
	}
	if out, _, _ := d.cli("net", "log", "--after", "1", id); !strings.Contains(out, "origin.test:") || !strings.Contains(out, "not_allowed") {
		t.Errorf("net log after 1:\n%s", out)
	}
	var paths []string
	for _, r := range o.Requests() {
		paths = append(paths, r.Path)
	}
	if strings.Join(paths, " ") != "/cli" {
		t.Errorf("the host received %v, want /cli only", paths)
	}
}
