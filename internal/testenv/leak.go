package testenv

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Snapshot is what a test binary holds before its tests run: descriptors, goroutines
// and child processes. Check, after the tests, reports what they left behind, so every
// TestMain can fail a run that leaks.
type Snapshot struct {
	fds, goroutines int
}

// Take records the baseline. It first starts the runtime's poller (two descriptors it
// keeps for the life of the process) so they do not count as a leak.
func Take() Snapshot {
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	return Snapshot{fds: countFDs(), goroutines: len(goroutines())}
}

// Check waits up to grace for goroutines and descriptors to wind down and returns an
// error naming whatever is still above the baseline, and any child process left.
// While fuzzing, the engine keeps goroutines and pipes of its own, so Check reports
// nothing.
func (s Snapshot) Check(grace time.Duration) error {
	if fuzzing() {
		return nil
	}
	deadline := time.Now().Add(grace)
	for (countFDs() > s.fds || len(goroutines()) > s.goroutines) && time.Now().Before(deadline) {
		// The pipes net's splice keeps in a sync.Pool are closed by finalizers
		// once collected: not a leak.
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	var problems []string
	if n := countFDs(); n > s.fds {
		problems = append(problems, fmt.Sprintf("%d file descriptors open, %d before the tests: %s", n, s.fds, fdTargets()))
	}
	if g := goroutines(); len(g) > s.goroutines {
		problems = append(problems, fmt.Sprintf("%d goroutines, %d before the tests:\n%s", len(g), s.goroutines, strings.Join(g, "\n\n")))
	}
	if kids := children(); len(kids) > 0 {
		problems = append(problems, fmt.Sprintf("child processes left: %v", kids))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("leak: %s", strings.Join(problems, "; "))
}

// goroutines returns the stacks of the running goroutines, leaving out those the
// runtime and the fuzzing engine start for signal handling.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "os/signal.") {
			out = append(out, g)
		}
	}
	return out
}

func fuzzing() bool {
	f, w := flag.Lookup("test.fuzz"), flag.Lookup("test.fuzzworker")
	return (f != nil && f.Value.String() != "") || (w != nil && w.Value.String() == "true")
}

// Main is a TestMain body: it takes the baseline, runs the tests, and exits with
// their status, or 1 if they passed but left goroutines, descriptors or child
// processes behind (Check with grace).
func Main(m *testing.M, grace time.Duration) {
	base := Take()
	code := m.Run()
	if code == 0 {
		if err := base.Check(grace); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
