package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestPythonClient runs the Python client's tests (clients/python/tests) with
// the system Python against a real daemon of the test's own: its socket, state
// directory and tokens.
func TestPythonClient(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Require(t, false, "no /usr/bin/python3 for the Python client's tests")
	}
	d := startDaemon(t, t.TempDir())
	dir, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-B", "-m", "unittest", "discover", "-v", "-s", "tests")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AGENTBOX_SOCKET=" + d.socket,
		"AGENTBOX_TOKEN=" + e2eToken, "AGENTBOX_TEST_TOKEN_B=" + e2eTokenB,
		"AGENTBOX_TEST_WORKSPACE=" + filepath.Join(d.work, "proj")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	// Every test ran: none skipped, and as many as the file holds.
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests?`).FindSubmatch(out)
	if m == nil || regexp.MustCompile(`skipped`).Match(out) {
		t.Fatalf("unittest output:\n%s", out)
	}
	if n, _ := strconv.Atoi(string(m[1])); n < 12 {
		t.Fatalf("only %d Python tests ran:\n%s", n, out)
	}
}
