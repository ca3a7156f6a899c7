package grade

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// The built-in suite, extracted once for the whole package.
var (
	suiteDir   string
	suiteTasks []*task.Task
	suiteErr   error
)

// TestMain doubles as the sandbox init, extracts the built-in suite, and fails
// the run if the tests leave descriptors, goroutines or processes behind.
func TestMain(m *testing.M) {
	nsinit.MaybeRun()
	base := testenv.Take()
	dir, err := os.MkdirTemp("", "agentbox-grade-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	suiteDir = dir
	suiteTasks, suiteErr = task.Builtin(dir + "/suite")
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := base.Check(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
