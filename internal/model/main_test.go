package model

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the run if tests leave goroutines behind (a stream reader or an
// idle timer that outlives its call), descriptors or child processes.
func TestMain(m *testing.M) {
	testenv.Main(m, 30*time.Second)
}
