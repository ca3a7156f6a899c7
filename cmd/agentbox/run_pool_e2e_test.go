package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunPool: run --pool runs the command in a fresh environment of the
// daemon, claimed from its warm pool when the workspace and limits match, with
// the command's output and exit status; flags the daemon cannot honour are
// refused, and without a reachable daemon run runs the command itself.
func TestRunPool(t *testing.T) {
	d := startDaemonWith(t, t.TempDir(), "pools:\n  - {workspace: %[1]s/proj, min: 1, max: 2}\n")
	ws := filepath.Join(d.work, "proj")
	claims := func() string {
		m := regexp.MustCompile(`agentbox_pool_claims_total\{pool="0"\} (\d+)`).FindStringSubmatch(poolMetrics(t, d))
		if m == nil {
			t.Fatal("no pool metrics")
		}
		return m[1]
	}
	if !eventually(time.Minute, func() bool { return strings.Contains(poolMetrics(t, d), `agentbox_pool_ready{pool="0"} 1`) }) {
		t.Fatalf("the pool never filled:\n%s", poolMetrics(t, d))
	}
	out, errOut, status := d.cli("run", "--pool", "--workspace", ws, "--", "sh", "-c", "cat hello.txt; echo new > hello.txt; exit 3")
	if out != "hello\n" || status != 3 {
		t.Fatalf("run --pool: %q %q, status %d", out, errOut, status)
	}
	if got := claims(); got != "1" {
		t.Fatalf("claims after one run: %s", got)
	}
	// The next run gets a fresh environment: the first one's write is gone, as
	// is the host's file untouched.
	out, errOut, status = d.cli("run", "--pool", "--workspace", ws, "--json", "--", "cat", "hello.txt")
	if !strings.Contains(out, `"stdout":"hello\n"`) || status != 0 {
		t.Fatalf("second run --pool: %q %q, status %d", out, errOut, status)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "hello.txt")); string(b) != "hello\n" {
		t.Fatalf("the host workspace changed: %q", b)
	}
	_, errOut, status = d.cli("run", "--pool", "--write", "--workspace", ws, "--", "true")
	if status == 0 || !strings.Contains(errOut, "--pool: --write is not available") {
		t.Fatalf("run --pool --write: %q, status %d", errOut, status)
	}
	// No daemon: run runs the command itself.
	cmd := exec.Command(agentbox, "run", "--pool", "--workspace", ws, "--", "cat", "hello.txt")
	cmd.Env = append(os.Environ(), "AGENTBOX_SERVER="+filepath.Join(t.TempDir(), "none.sock"), "AGENTBOX_TOKEN="+e2eToken)
	if b, err := cmd.CombinedOutput(); err != nil || string(b) != "hello\n" {
		t.Fatalf("run --pool without a daemon: %q, %v", b, err)
	}
}

// poolMetrics returns the daemon's metrics about its pools.
func poolMetrics(t *testing.T, d *daemon) string { return daemonMetrics(t, d, "agentbox_pool_") }

// daemonMetrics returns the daemon's metrics whose names start with prefix,
// as the operator sees them.
func daemonMetrics(t *testing.T, d *daemon, prefix string) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://agentbox/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e2eTokenOp)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
