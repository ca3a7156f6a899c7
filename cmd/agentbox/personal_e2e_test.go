package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestPersonalDaemon: `agentbox serve` without --config lets its user create
// environments from their home directory and the directory it started in, and
// refuses anything else naming workspace_roots (issue 13: every env create
// failed with EPERM and "use a token with the needed scope"); with
// $AGENTBOX_CONFIG set to what config init wrote, it serves that configuration.
func TestPersonalDaemon(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	home, started := filepath.Join(dir, "home"), filepath.Join(dir, "started")
	for _, d := range []string{filepath.Join(home, "proj"), filepath.Join(started, "proj"), filepath.Join(dir, "elsewhere")} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644)
	}
	socket := filepath.Join(dir, "run", "agentbox.sock")
	base := append(os.Environ(), "HOME="+home, "AGENTBOX_SOCKET="+socket, "AGENTBOX_SERVER=", "AGENTBOX_TOKEN=", "AGENTBOX_CONFIG=")
	serve := func(env []string) func() {
		t.Helper()
		cmd := exec.Command(agentbox, "serve", "--state-dir", filepath.Join(dir, "state"), "--on-exit", "destroy")
		cmd.Dir, cmd.Env = started, env
		logf, _ := os.Create(filepath.Join(dir, "serve.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			logf.Close()
		}
		deadline := time.Now().Add(time.Minute)
		for {
			c, _ := client.New(client.Options{Socket: socket})
			if c.Health(context.Background()) == nil {
				return stop
			}
			if time.Now().After(deadline) {
				stop()
				b, _ := os.ReadFile(logf.Name())
				t.Fatalf("serve did not come up:\n%s", b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	run := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(agentbox, args...)
		cmd.Env = env
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return o.String(), e.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), 0
	}
	stop := serve(base)
	for _, tc := range []struct {
		ws     string
		status int
		err    string
	}{
		{filepath.Join(home, "proj"), 0, ""},
		{filepath.Join(started, "proj"), 0, ""},
		{filepath.Join(dir, "elsewhere"), 125, "tenants.local.workspace_roots"},
		{"/etc", 125, "workspace_roots"},
	} {
		out, e, st := run(base, "env", "create", "--workspace", tc.ws)
		if st != tc.status || !strings.Contains(e, tc.err) {
			t.Fatalf("env create --workspace %s: %d %q", tc.ws, st, e)
		}
		if st == 0 {
			run(base, "env", "rm", strings.TrimSpace(out))
		}
	}
	stop()

	cfgPath := filepath.Join(dir, "conf", "agentbox.yaml")
	if _, e, st := run(base, "config", "init", cfgPath); st != 0 {
		t.Fatalf("config init: %s", e)
	}
	tok, err := config.ReadLocalToken(filepath.Join(dir, "conf", "agentbox.token"))
	if err != nil || tok == "" {
		t.Fatalf("token: %q %v", tok, err)
	}
	withCfg := append(base, "AGENTBOX_CONFIG="+cfgPath, "AGENTBOX_TOKEN="+tok)
	stop = serve(withCfg)
	defer stop()
	// The file's roots, not the personal default: home only.
	if _, e, st := run(withCfg, "env", "create", "--workspace", filepath.Join(started, "proj")); st != 125 || !strings.Contains(e, "workspace_roots") {
		t.Fatalf("AGENTBOX_CONFIG ignored: %d %s", st, e)
	}
	out, e, st := run(withCfg, "env", "create", "--workspace", filepath.Join(home, "proj"))
	if st != 0 {
		t.Fatalf("env create under the configured root: %s", e)
	}
	run(withCfg, "env", "rm", strings.TrimSpace(out))
}
