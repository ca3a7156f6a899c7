package eval

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain runs the sandbox init when the test binary is re-executed as one, and
// fails the run if the tests leave goroutines, processes or descriptors behind.
func TestMain(m *testing.M) {
	nsinit.MaybeRun()
	base := testenv.Take()
	code := m.Run()
	if code == 0 {
		if err := base.Check(5 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
