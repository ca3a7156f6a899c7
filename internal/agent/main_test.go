package agent

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain runs the sandbox init when the test binary is re-executed as one, and fails the
// run if the tests leave goroutines, child processes or file descriptors behind.
func TestMain(m *testing.M) {
	nsinit.MaybeRun() // the test binary doubles as the sandbox init
	testenv.Main(m, 30*time.Second)
}
