package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoordinatorTokenFileMissing: coordinator serve with a token file that does
// not exist yet (as a first reader of the README has) fails before it listens,
// naming the flag, the file and what the file must hold.
func TestCoordinatorTokenFileMissing(t *testing.T) {
	dir := t.TempDir()
	envTok := filepath.Join(dir, "env.token")
	if err := os.WriteFile(envTok, []byte("abx_0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, tc := range []struct {
		name  string
		files []string
		want  []string
	}{
		{"env token", []string{filepath.Join(dir, "nope.token"), envTok}, []string{"--env-token-file", "nope.token", "agentbox config init"}},
		{"own token", []string{envTok, filepath.Join(dir, "coord.token")}, []string{"--token-file", "coord.token", "at least 16 bytes", "/dev/urandom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, status := run(t, env, "coordinator", "serve", "--state-dir", filepath.Join(dir, "coord"), "--listen", "127.0.0.1:0",
				"--env-url", "http://127.0.0.1:1", "--env-token-file", tc.files[0], "--token-file", tc.files[1])
			if status == 0 {
				t.Fatalf("coordinator serve exited 0 without its token file: %s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not name %q", stderr, w)
				}
			}
		})
	}
}

// TestCoordinatorConfigRefused: coordinator serve --config with a token file
// too, or with a configuration that does not load, fails before it listens,
// naming what to change.
func TestCoordinatorConfigRefused(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "coord.token")
	if err := os.WriteFile(tok, []byte("coord-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "coordinator.yaml")
	if err := os.WriteFile(cfg, []byte("tenants:\n  acme: {}\ntokens:\n  - {file: coord.token, tenant: acme}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"config and a token file", []string{"--config", cfg, "--token-file", tok}, []string{"--config", "leave --token-file and --env-token-file out"}},
		{"a tenant without its daemon token", []string{"--config", cfg}, []string{"coordinator.yaml", `tenant "acme"`, "env_token_file is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"coordinator", "serve", "--state-dir", filepath.Join(dir, "coord"), "--listen", "127.0.0.1:0",
				"--env-url", "http://127.0.0.1:1"}, tc.flags...)
			_, stderr, status := run(t, env, args...)
			if status == 0 {
				t.Fatalf("coordinator serve exited 0: %s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not name %q", stderr, w)
				}
			}
		})
	}
}
