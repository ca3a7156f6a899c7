//go:build !linux

package nethost

import (
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// New needs Linux network namespaces.
func New(t testing.TB) *Host {
	t.Helper()
	testenv.Require(t, false, "nethost needs Linux network namespaces")
	return nil
}
