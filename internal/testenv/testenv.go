// Package testenv lets tests that need root or a kernel feature say so. On a developer
// machine a missing capability skips the test with its reason; under CI=true (where
// every capability must be present) it fails the test instead, so CI never passes by
// skipping. It does not probe for features itself: callers pass what they found.
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI, where nothing may be skipped.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require skips the test (or fails it under CI) unless ok holds.
func Require(t testing.TB, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if InCI() {
		t.Fatalf("required under CI=true but missing: %s", reason)
	}
	t.Skipf("skipped: %s", reason)
}

// RequireRoot requires that the test runs as uid 0.
func RequireRoot(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "needs root")
}

// SkipShort skips a slow test under `go test -short`, the fast loop, saying why it
// is slow; .ci/run runs everything.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s (.ci/run runs it)", why)
	}
}
