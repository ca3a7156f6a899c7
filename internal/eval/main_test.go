package eval

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain runs the sandbox init when the test binary is re-executed as one, and
// fails the run if the tests leave goroutines, processes or descriptors behind.
func TestMain(m *testing.M) {
	nsinit.MaybeRun()
	testenv.Main(m, 30*time.Second)
}
