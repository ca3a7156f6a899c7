package seccomp

import (
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain doubles the test binary as the victim of the real-deal tests (see
// victim_linux_amd64_test.go) and otherwise checks that the tests leak no file
// descriptors, goroutines or child processes.
func TestMain(m *testing.M) {
	if name := os.Getenv(victimEnv); name != "" {
		os.Exit(victimMain(name, os.Getenv(victimFilterEnv) == "1"))
	}
	testenv.Main(m, 30*time.Second)
}
