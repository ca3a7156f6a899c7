package model

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the run if tests leave goroutines behind (a stream reader or an
// idle timer that outlives its call), descriptors or child processes.
func TestMain(m *testing.M) {
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
