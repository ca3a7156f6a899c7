package client

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the package if requests leave goroutines or descriptors behind.
func TestMain(m *testing.M) {
	testenv.Main(m, 30*time.Second)
}
