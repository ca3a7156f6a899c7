package task

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// The built-in suite, extracted once for the whole package.
var (
	suiteDir   string
	suiteTasks []*Task
	suiteErr   error
)

// TestMain extracts the built-in suite and fails the run if the tests leave
// descriptors or goroutines behind.
func TestMain(m *testing.M) {
	base := testenv.Take()
	dir, err := os.MkdirTemp("", "agentbox-task-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	suiteDir = dir
	suiteTasks, suiteErr = Builtin(dir + "/suite")
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

// builtin returns the loaded built-in suite, failing the test if it did not load.
func builtin(t testing.TB) []*Task {
	t.Helper()
	if suiteErr != nil {
		t.Fatalf("Builtin: %v", suiteErr)
	}
	return suiteTasks
}

// builtinTask returns one built-in task by id.
func builtinTask(t testing.TB, id string) *Task {
	t.Helper()
	for _, tk := range builtin(t) {
		if tk.ID == id {
			return tk
		}
	}
	t.Fatalf("no built-in task %q", id)
	return nil
}
