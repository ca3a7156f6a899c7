package runner

import (
	"fmt"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"os"
	"testing"
)

// TestMain fails the package if a test leaks a child process or a file descriptor.
func TestMain(m *testing.M) {
	nsinit.MaybeRun() // the test binary doubles as the sandbox init
	// Start the runtime's poller (it keeps an epoll and an event descriptor) before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	openStdin(nil) // the shared /dev/null stays open for the life of the process
	fdsBefore := countFDs()
	code := m.Run()
	if code == 0 {
		if kids, _ := ourChildren(); len(kids) > 0 {
			fmt.Fprintf(os.Stderr, "leaked child processes: %v\n", kids)
			code = 1
		}
		if after := countFDs(); after > fdsBefore {
			fmt.Fprintf(os.Stderr, "leaked file descriptors: %d before, %d after\n", fdsBefore, after)
			code = 1
		}
	}
	os.Exit(code)
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}
