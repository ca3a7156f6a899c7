package egress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// TestNPMInstall: a real package manager through the proxy. npm installs a package
// from a registry on a test host, over HTTPS_PROXY only; the registry demands a
// token that npm knows only as a placeholder, which the proxy replaces for the
// registry and nobody else. Nothing npm wrote holds the token.
func TestNPMInstall(t *testing.T) {
	npm, err := exec.LookPath("npm")
	testenv.Require(t, err == nil, "needs npm")
	const (
		registry = "registry.test"
		pkg      = "agentbox-egress-demo"
		token    = "npm-real-token-5e6f7a"
	)
	host := nethost.New(t)
	origin := nethost.StartOrigin(t, host, registry)
	np := origin.ServeNPM(registry, pkg, "fetched through the egress proxy", token)
	base := np.Registry

	placeholder, _ := egress.NewPlaceholder("NPM_TOKEN")
	p, err := egress.NewProxy(egress.Config{
		Policy: egress.Policy{
			Allow:        []string{registry},
			AllowPrivate: []netip.Prefix{host.Prefix},
			DNSOverride:  map[string]netip.Addr{registry: host.Addr},
			Secrets:      []egress.Secret{{Name: "NPM_TOKEN", Hosts: []string{registry}, Placeholder: placeholder, Value: token}},
		},
		UpstreamRoots: origin.Roots,
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, p, "127.0.0.1:0")

	home := t.TempDir()
	project := filepath.Join(home, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name":"demo","version":"0.0.0","private":true}`), 0o644)
	ca := filepath.Join(home, "sandbox-ca.pem")
	os.WriteFile(ca, p.CACertPEM(), 0o644)
	npmrc := filepath.Join(home, ".npmrc")
	os.WriteFile(npmrc, []byte(np.AuthKey+"="+placeholder+"\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", pkg)
	cmd.Dir = project
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir(),
		"npm_config_cache=" + filepath.Join(home, "cache"), "npm_config_userconfig=" + npmrc,
		"npm_config_registry=" + base + "/", "npm_config_cafile=" + ca,
		"npm_config_update_notifier=false", "npm_config_fetch_retries=0",
	}, egress.ProxyEnv(addr)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm install: %v\n%s\nproxy log: %+v", err, out, p.Log())
	}
	got, err := os.ReadFile(filepath.Join(project, "node_modules", pkg, "index.js"))
	if err != nil || !strings.Contains(string(got), "fetched through the egress proxy") {
		t.Fatalf("installed module: %q, %v", got, err)
	}
	if reqs := origin.Requests(); len(reqs) < 2 {
		t.Fatalf("registry saw %d requests", len(reqs))
	}
	p.Close()
	for _, e := range p.Log() {
		if e.Host != registry || e.Decision != egress.Allowed || !e.Intercepted {
			t.Errorf("event %+v", e)
		}
	}
	// The token exists only in the registry's view: not in anything npm wrote
	// (project, cache, logs), not in its output, not in the proxy's log.
	if bytes.Contains(out, []byte(token)) {
		t.Error("npm's output holds the token")
	}
	filepath.Walk(home, func(path string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the token", path)
			}
		}
		return nil
	})
	j, _ := json.Marshal(p.Log())
	if bytes.Contains(j, []byte(token)) {
		t.Error("the proxy's log holds the token")
	}
}
