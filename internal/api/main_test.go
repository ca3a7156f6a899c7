package api

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMain lets the test binary double as the sandbox init (the end-to-end tests
// run real environments), and fails the package if the tests leave goroutines
// (an event stream, a relay or a handler that never ends), descriptors or child
// processes behind.
func TestMain(m *testing.M) {
	nsinit.MaybeRun()
	snap := testenv.Take()
	code := m.Run()
	http.DefaultClient.CloseIdleConnections()
	if err := snap.Check(30 * time.Second); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
