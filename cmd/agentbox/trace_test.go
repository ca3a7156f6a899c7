package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceVerifyBadAnchor: a mistyped --anchor is a usage error naming the
// expected form, not a verdict that the log was rewritten.
func TestTraceVerifyBadAnchor(t *testing.T) {
	ev := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(ev, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	so, se, st := run(t, env, "trace", "verify", ev, "--anchor", "sha256:00")
	if st != 125 || !strings.Contains(se, `bad anchor "sha256:00": want sha256:<64 hex digits>`) || strings.Contains(se, "rewritten") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", st, so, se)
	}
}
