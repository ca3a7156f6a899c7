package task

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
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
	if r, w, err := os.Pipe(); err == nil { // start the poller before counting
		r.Close()
		w.Close()
	}
	fds, gs := countFDs(), runtime.NumGoroutine()
	dir, err := os.MkdirTemp("", "agentbox-task-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	suiteDir = dir
	suiteTasks, suiteErr = Builtin(dir + "/suite")
	code := m.Run()
	os.RemoveAll(dir)
	if f := flag.Lookup("test.fuzz"); code == 0 && (f == nil || f.Value.String() == "") {
		deadline := time.Now().Add(2 * time.Second)
		for (countFDs() > fds || runtime.NumGoroutine() > gs) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := countFDs(); n > fds {
			fmt.Fprintf(os.Stderr, "leak: %d descriptors open, %d at start\n", n, fds)
			code = 1
		}
		if n := runtime.NumGoroutine(); n > gs {
			fmt.Fprintf(os.Stderr, "leak: %d goroutines, %d at start\n", n, gs)
			code = 1
		}
	}
	os.Exit(code)
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
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
