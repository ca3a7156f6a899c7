package landlock

import (
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
	testenv.Main(m, 30*time.Second)
}
