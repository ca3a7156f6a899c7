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
