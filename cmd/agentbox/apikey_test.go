package main

import (
	"os"
	"strings"
	"testing"
)

// TestNoAPIKey: the openai policy on OpenAI's own API, or the anthropic one,
// without a key fails at once, naming the variable to set, rather than after a
// preflight's retries; with --base-url (a local server that may take none) the
// openai policy goes on without one.
func TestNoAPIKey(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "openai", "--model", "gpt-4.1"}, "OPENAI_API_KEY"},
		{[]string{"--policy", "anthropic", "--model", "claude"}, "ANTHROPIC_API_KEY"},
	} {
		args := append([]string{"eval", "--tasks", "calc", "--out", dir + "/out"}, tc.args...)
		if _, stderr, status := run(t, env, args...); status != 125 || !strings.Contains(stderr, "no API key: set "+tc.want) {
			t.Errorf("%v without a key: exit %d, stderr %q; want 125 naming %s", tc.args, status, stderr, tc.want)
		}
	}
	// A local server on a closed port: the preflight runs (no key asked for) and fails on the route.
	_, stderr, status := run(t, env, "eval", "--tasks", "calc", "--out", dir+"/out2", "--policy", "openai", "--model", "m", "--base-url", "http://127.0.0.1:1/v1")
	if status != 125 || strings.Contains(stderr, "no API key") || !strings.Contains(stderr, "cannot be reached") {
		t.Errorf("--base-url without a key: exit %d, stderr %q; want the preflight's failure", status, stderr)
	}
}
