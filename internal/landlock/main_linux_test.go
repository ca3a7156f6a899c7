package landlock

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain doubles as the victim (see runVictim) and checks that the tests leak no
// file descriptors, goroutines or child processes.
func TestMain(m *testing.M) {
	if spec := os.Getenv(victimEnv); spec != "" {
		os.Exit(runVictim(spec))
	}
	base := testenv.Take()
	code := m.Run()
	if code == 0 {
		if err := base.Check(2 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
