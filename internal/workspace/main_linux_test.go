package workspace

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the run if the tests leave descriptors or goroutines behind.
func TestMain(m *testing.M) {
	// The runtime's poller keeps two descriptors once started; start it first.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds, gs := countFDs(), runtime.NumGoroutine()
	code := m.Run()
	// The fuzzing engine keeps goroutines and descriptors of its own.
	if f := flag.Lookup("test.fuzz"); code == 0 && (f == nil || f.Value.String() == "") {
		deadline := time.Now().Add(30 * time.Second)
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
