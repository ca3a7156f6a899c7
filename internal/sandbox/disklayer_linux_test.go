package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEvict: a sandbox on disk layers holds 48 MiB it wrote to /workspace in
// RAM (page cache, charged to its cgroup) until, paused, Evict writes them
// back and gives at least 32 MiB of the charge back. Its process, frozen
// meanwhile with the file open (and unlinked: no path reaches it any more),
// continues after Resume and reads the same bytes through its descriptor. A
// running sandbox and one on tmpfs layers are refused.
func TestEvict(t *testing.T) {
	sb := startPersistent(t, Config{Workspace: t.TempDir(), DiskLayers: true, Memory: 512 << 20, WorkspaceSize: 256 << 20})
	var st unix.Statfs_t
	if err := unix.Statfs(sb.state, &st); err != nil || st.Type != unix.EXT4_SUPER_MAGIC {
		t.Fatalf("the state directory is on fs type %#x (%v), want ext4", st.Type, err)
	}
	e, err := execIn(t, sb, ExecConfig{Argv: []string{"/bin/sh", "-c", `
head -c 50331648 /dev/urandom > /workspace/big && sha256sum < /workspace/big > /workspace/sum || exit 1
exec 3< /workspace/big
rm /workspace/big
echo ready
read x
sha256sum <&3 | cmp - /workspace/sum && echo same`}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(syncString(e), "ready") {
		if time.Now().After(deadline) {
			t.Fatalf("the writer never got ready: %q", syncString(e))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := sb.Evict(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Evict of a running sandbox = %v, want ErrUnsupported", err)
	}
	if err := sb.Pause(); err != nil {
		t.Fatal(err)
	}
	ev, err := sb.Evict()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("evicted: %d MiB -> %d MiB", ev.Before>>20, ev.After>>20)
	if ev.Before < 48<<20 || ev.Before-ev.After < 32<<20 {
		t.Errorf("Evict took the charge from %d to %d bytes: want the 48 MiB written in it before and at least 32 MiB back", ev.Before, ev.After)
	}
	if err := sb.Resume(); err != nil {
		t.Fatal(err)
	}
	e.stdin.Write([]byte("\n"))
	ex, _ := e.finish(t)
	if ex.ExitCode != 0 || !strings.Contains(syncString(e), "same") {
		t.Errorf("after Resume the reader exited %+v: %q", ex, syncString(e)+e.stderr.String())
	}

	tmpfs := startPersistent(t, Config{Workspace: t.TempDir()})
	if err := tmpfs.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := tmpfs.Evict(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Evict of a sandbox on tmpfs layers = %v, want ErrUnsupported", err)
	}
}
