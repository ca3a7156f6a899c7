package main

import (
	"os"
	"strings"
	"testing"
)

// TestEnvForkCount: a fork count outside 1..100 is refused by the CLI with the
// range, before any daemon is asked (none runs here).
func TestEnvForkCount(t *testing.T) {
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, n := range []string{"0", "101", "-3"} {
		_, stderr, status := run(t, environ, "env", "fork", "env-x", "--count", n)
		if status == 0 || !strings.Contains(stderr, "--count "+n+": give 1 to 100") {
			t.Errorf("--count %s: status %d, stderr %q", n, status, stderr)
		}
	}
}
