package model

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if tests leave goroutines behind (a stream reader or an
// idle timer that outlives its call).
func TestMain(m *testing.M) {
	before := len(goroutines())
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for len(goroutines()) > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if g := goroutines(); len(g) > before {
			fmt.Fprintf(os.Stderr, "leak: %d goroutines before the tests, %d after\n%s\n", before, len(g), strings.Join(g, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// goroutines returns the stacks of the running goroutines, leaving out the ones
// the runtime and the fuzzing engine start (signal handling).
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
