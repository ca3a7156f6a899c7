package image

import (
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// helperEnv makes the test binary one of this package's test helpers (see
// runHelper): a second importing process, a user namespace holder, a sandbox-like
// overlay mount.
const helperEnv = "AGENTBOX_IMAGE_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	testenv.Main(m, 5*time.Second)
}
