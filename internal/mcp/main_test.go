package mcp

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the package if sessions leave goroutines or descriptors behind.
func TestMain(m *testing.M) {
	snap := testenv.Take()
	code := m.Run()
	if err := snap.Check(5 * time.Second); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
