package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRunRootSize: run --root-size bounds what a command may write to its
// template's root: 4 MiB into /opt/w fail past --root-size 1M (ENOSPC, and the
// run names the root_size limit and the flag) and fit in --root-size 16M; the
// workspace's writes do not count against it. Misuse is refused.
func TestRunRootSize(t *testing.T) {
	testenv.RequireRoot(t) // the image store needs root
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	spec := filepath.Join(dir, "host.yaml")
	os.WriteFile(spec, []byte("base: {host: true}\nsteps: [{run: mkdir -p /opt/w}]\n"), 0o644)
	if out, errOut, st := cli(t, "template", "--state-dir", state, "build", "--name", "host", "-f", spec); st != 0 {
		t.Fatalf("template build: status %d\n%s%s", st, out, errOut)
	}
	ws := t.TempDir()
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return cli(t, append([]string{"run", "--state-dir", state, "--template", "host", "--workspace", ws}, args...)...)
	}
	const fill = "head -c 4194304 /dev/zero > /opt/w/big"
	out, errOut, st := run("--root-size", "1M", "--", "sh", "-c", fill)
	if st == 0 || !strings.Contains(errOut, "No space left on device") ||
		!strings.Contains(errOut, "run ended by the root_size limit") || !strings.Contains(errOut, "--root-size 1.0M") {
		t.Errorf("4 MiB into a 1 MiB root: status %d\n%s%s", st, out, errOut)
	}
	out, errOut, st = run("--root-size", "1M", "--json", "--", "sh", "-c", fill)
	if st == 0 || !strings.Contains(out, `"limit":"root_size"`) {
		t.Errorf("--json of 4 MiB into a 1 MiB root: status %d\n%s%s", st, out, errOut)
	}
	if out, errOut, st = run("--root-size", "16M", "--", "sh", "-c", fill+" && wc -c < /opt/w/big"); st != 0 || strings.TrimSpace(out) != "4194304" {
		t.Errorf("4 MiB into a 16 MiB root: status %d\n%s%s", st, out, errOut)
	}
	if out, errOut, st = run("--root-size", "1M", "--", "sh", "-c", "head -c 4194304 /dev/zero > /workspace/big && wc -c < /workspace/big"); st != 0 || strings.TrimSpace(out) != "4194304" {
		t.Errorf("4 MiB into the workspace beside a 1 MiB root: status %d\n%s%s", st, out, errOut)
	}
	// A command that fails for its own reasons on a root with room is not the limit's.
	if _, errOut, st = run("--root-size", "1M", "--", "sh", "-c", "exit 3"); st != 3 || strings.Contains(errOut, "root_size") {
		t.Errorf("exit 3 on a 1 MiB root: status %d, stderr %q", st, errOut)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no image", []string{"run", "--root-size", "1M", "--", "true"}, "--root-size bounds the writes to an image root: give --template NAME or --image REF"},
		{"bad size", []string{"run", "--state-dir", state, "--template", "host", "--root-size", "12Q", "--", "true"}, `invalid size "12Q"`},
		{"negative", []string{"run", "--state-dir", state, "--template", "host", "--root-size", "-1", "--", "true"}, "--root-size"},
		{"gvisor", []string{"run", "--state-dir", state, "--template", "host", "--isolation", "gvisor", "--root-size", "1M", "--", "true"}, "--root-size"},
		{"pool", []string{"run", "--state-dir", state, "--template", "host", "--pool", "--root-size", "1M", "--", "true"}, "--pool: --root-size is not available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, st := cli(t, tc.args...)
			if st != 125 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("status %d, stderr %q; want 125 and %q", st, errOut, tc.want)
			}
		})
	}
}
