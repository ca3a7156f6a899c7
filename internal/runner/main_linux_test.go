package runner

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the package if a test leaks a child process, a goroutine or a file
// descriptor.
func TestMain(m *testing.M) {
	nsinit.MaybeRun() // the test binary doubles as the sandbox init
	openStdin(nil)    // the shared /dev/null stays open for the life of the process
	testenv.Main(m, 30*time.Second)
}
