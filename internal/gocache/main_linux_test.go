package gocache

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain doubles as the sandbox init and fails the run if the tests leave
// descriptors, goroutines or processes behind.
func TestMain(m *testing.M) {
	nsinit.MaybeRun()
	testenv.Main(m, 30*time.Second)
}
