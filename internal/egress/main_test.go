package egress

import (
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain fails the run if a test leaves a tunnel's goroutines, a listener or a
// connection behind: the proxy's Close must end everything it started.
func TestMain(m *testing.M) {
	testenv.Main(m, 5*time.Second)
}
