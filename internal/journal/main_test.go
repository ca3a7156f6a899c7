package journal

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the run if the tests leave goroutines, child processes or file
// descriptors behind (an unclosed store).
func TestMain(m *testing.M) { testenv.Main(m, 30*time.Second) }
