package report

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the run if the tests leave goroutines, child processes (a
// browser) or file descriptors behind.
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
