package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// workspaceFixture makes a host workspace under t.TempDir(), whose parent is a 0700
// root directory the sandbox's host uid cannot traverse.
func workspaceFixture(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{"a.txt": "lower a\n", "b.txt": "lower b\n", "sub/c.txt": "lower c\n", "other.txt": "other\n"}
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A file of another host user appears as nobody: readable, not writable.
	if err := os.Chown(filepath.Join(ws, "other.txt"), 4242, 4242); err != nil {
		t.Fatal(err)
	}
	return ws
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const workspaceScript = `cd /workspace && cat a.txt && stat -c '%u %U' . a.txt other.txt &&
	echo new > new.txt && echo mod > a.txt && rm b.txt && echo deep > sub/d.txt &&
	(echo x >> other.txt 2>/dev/null && echo other writable || echo other denied) && ls -A | tr '\n' ' '`

const workspaceWant = "lower a\n1000 agentbox\n1000 agentbox\n65534 nobody\nother denied\na.txt new.txt other.txt sub "

// TestWorkspaceOverlay: every write lands in the private upper layer (deletions as
// whiteouts) and the host workspace stays as it was. The workspace's owner appears as
// the sandbox user (idmapped lower layer), another host user's file as nobody.
func TestWorkspaceOverlay(t *testing.T) {
	ws := workspaceFixture(t)
	var upper string
	r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", workspaceScript}, Workspace: ws}, false).
		finishInspect(t, "", func(sb *Sandbox) {
			upper = sb.UpperDir()
			if upper == "" {
				t.Fatal("no upper dir")
			}
			checkUpper(t, sb, upper)
		})
	if r.stdout != workspaceWant || r.exit.ExitCode != 0 {
		t.Fatalf("inside: %q (exit %+v, stderr %q), want %q", r.stdout, r.exit, r.stderr, workspaceWant)
	}
	// The host workspace is untouched.
	for name, want := range map[string]string{"a.txt": "lower a\n", "b.txt": "lower b\n", "other.txt": "other\n"} {
		if got := readFile(t, filepath.Join(ws, name)); got != want {
			t.Errorf("host %s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"new.txt", "sub/d.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); !os.IsNotExist(err) {
			t.Errorf("host %s exists (%v)", name, err)
		}
	}
	// Destroy removed the upper layer and its tmpfs.
	if _, err := os.Lstat(filepath.Dir(upper)); !os.IsNotExist(err) {
		t.Errorf("upper layer still there after Destroy: %v", err)
	}
	if m := hostMountsUnder(t, filepath.Dir(upper)); len(m) != 0 {
		t.Errorf("host mounts left after Destroy: %q", m)
	}
}

// checkUpper checks the upper layer of workspaceScript's run: the changes, owned by
// the sandbox's host uid, on a tmpfs of the host's (as root).
func checkUpper(t *testing.T, sb *Sandbox, upper string) {
	t.Helper()
	for name, want := range map[string]string{"new.txt": "new\n", "a.txt": "mod\n", "sub/d.txt": "deep\n"} {
		p := filepath.Join(upper, name)
		if got := readFile(t, p); got != want {
			t.Errorf("upper %s = %q, want %q", name, got, want)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil || int(st.Uid) != sb.HostUID() {
			t.Errorf("upper %s owner %d (%v), want %d", name, st.Uid, err, sb.HostUID())
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(upper, "b.txt"), &st); err != nil ||
		st.Mode&syscall.S_IFMT != syscall.S_IFCHR || st.Rdev != 0 {
		t.Errorf("upper b.txt is not a whiteout (0:0 character device): mode %o rdev %d err %v", st.Mode, st.Rdev, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(upper, &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Errorf("upper layer is not on a tmpfs: type %#x, %v", fs.Type, err)
	}
	if m := hostMountsUnder(t, filepath.Dir(upper)); len(m) != 1 || !strings.Contains(m[0], "nosuid,nodev") ||
		!strings.Contains(m[0], fmt.Sprintf("uid=%d", sb.HostUID())) || !strings.Contains(m[0], "mode=700") {
		t.Errorf("host mounts at the state directory: %q, want one nosuid, nodev, mode=700 tmpfs of uid %d", m, sb.HostUID())
	}
}

// hostMountsUnder returns the lines of this process's mountinfo whose mount point is
// dir or below it.
func hostMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, line)
		}
	}
	return out
}

// TestWorkspaceSize: what the sandbox writes to /workspace is bounded by
// WorkspaceSize, with the overlay (its upper layer is a host tmpfs of that size)
// and without a host workspace (an in-sandbox tmpfs); the host disk is not used.
func TestWorkspaceSize(t *testing.T) {
	const script = `dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1 | grep -o 'No space left on device'
		du -m /workspace/big | cut -f1`
	for _, c := range []struct {
		name string
		ws   string
	}{{"overlay", workspaceFixture(t)}, {"no-workspace", ""}} {
		t.Run(c.name, func(t *testing.T) {
			r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
				Workspace: c.ws, WorkspaceSize: 8 << 20})
			got := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if n, err := strconv.Atoi(got[len(got)-1]); len(got) != 2 || got[0] != "No space left on device" ||
				err != nil || n > 8 || n < 7 {
				// du rounds up: 7 to 8 MiB fit.
				t.Errorf("stdout %q stderr %q: want ENOSPC at 8 MiB", r.stdout, r.stderr)
			}
		})
	}
}

// TestWorkspaceWrite: in write mode changes reach the host workspace, as files of
// the workspace's owner; there is no upper layer.
func TestWorkspaceWrite(t *testing.T) {
	ws := workspaceFixture(t)
	r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", workspaceScript}, Workspace: ws, WorkspaceWrite: true})
	if r.stdout != workspaceWant {
		t.Fatalf("inside: %q (stderr %q), want %q", r.stdout, r.stderr, workspaceWant)
	}
	if r.sb.UpperDir() != "" {
		t.Errorf("UpperDir = %q in write mode", r.sb.UpperDir())
	}
	for name, want := range map[string]string{"a.txt": "mod\n", "new.txt": "new\n", "sub/d.txt": "deep\n"} {
		if got := readFile(t, filepath.Join(ws, name)); got != want {
			t.Errorf("host %s = %q, want %q", name, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("host b.txt not deleted: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(ws, "new.txt"), &st); err != nil || st.Uid != 0 {
		t.Errorf("new.txt owner %d (%v), want the workspace owner 0", st.Uid, err)
	}
}

// TestWorkspaceTmpfs: without a workspace, /workspace is an empty writable tmpfs.
func TestWorkspaceTmpfs(t *testing.T) {
	got := lines(t, "ls -A /workspace | wc -l; echo x > /workspace/f && cat /workspace/f; grep ' /workspace ' /proc/self/mountinfo | grep -o 'tmpfs tmpfs'")
	if strings.Join(got, ",") != "0,x,tmpfs tmpfs" {
		t.Errorf("got %q", got)
	}
}

// TestWorkspaceNotDir: Start refuses a workspace that is not a directory.
func TestWorkspaceNotDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{f, filepath.Join(t.TempDir(), "missing")} {
		if sb, err := Start(Config{Argv: []string{"/bin/true"}, Workspace: ws}, Stdio{}); err == nil {
			sb.Destroy()
			t.Errorf("Start with workspace %s succeeded", ws)
		}
	}
}

// TestWorkspaceWriteNoSetID: in write mode files reach the host as the workspace's
// owner (root here), so the sandbox must not be able to make one set-user-ID or
// set-group-ID: that would leave a root program for anyone on the host to run.
func TestWorkspaceWriteNoSetID(t *testing.T) {
	ws := t.TempDir()
	script := `cd /workspace && cp /bin/true t && chmod 0755 t && echo plain ok
		for m in 4755 2755 6755 u+s g+s; do chmod $m t 2>/dev/null && echo "chmod $m allowed"; done
		python3 -c '
import os
for flags, mode in ((os.O_CREAT|os.O_WRONLY, 0o4755), (os.O_CREAT|os.O_WRONLY, 0o2755)):
    try:
        os.close(os.open("n%o" % mode, flags, mode)); print("open %o allowed" % mode)
    except PermissionError: pass
try:
    os.mknod("k", 0o104755); print("mknod allowed")
except PermissionError: pass
'
		echo end`
	r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Workspace: ws, WorkspaceWrite: true})
	if r.stdout != "plain ok\nend\n" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	ents, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(ws, e.Name()))
		if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("host file %s has mode %v", e.Name(), fi.Mode())
		}
	}
}

// TestWorkspaceByPath: the way an unprivileged Start passes the workspace, the upper
// layer and a RootFS (by path, bound by the init; no idmap), forced here as root.
// The workspace and the state directory sit under /tmp, where the init mounts its
// new root: the init must open them before that mount hides them.
func TestWorkspaceByPath(t *testing.T) {
	forcePaths = true
	defer func() { forcePaths = false }()
	ws, err := os.MkdirTemp("/tmp", "agentbox-test-ws-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(ws)
	// Without an idmap the sandbox user is a stranger to root's files.
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("lower a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "cat /workspace/a.txt; stat -c %U /workspace/a.txt; echo new > /workspace/new.txt && cat /workspace/new.txt"
	for _, write := range []bool{false, true} {
		var upperNew string
		r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", script}, Workspace: ws, WorkspaceWrite: write,
			RootFS: "/"}, false).finishInspect(t, "", func(sb *Sandbox) {
			if up := sb.UpperDir(); up != "" {
				b, _ := os.ReadFile(filepath.Join(up, "new.txt"))
				upperNew = string(b)
			}
		})
		if r.stdout != "lower a\nnobody\nnew\n" {
			t.Errorf("write=%v: stdout %q stderr %q setup %v", write, r.stdout, r.stderr, r.exit.SetupErr)
		}
		_, err := os.Stat(filepath.Join(ws, "new.txt"))
		if write == os.IsNotExist(err) {
			t.Errorf("write=%v: host new.txt: %v", write, err)
		}
		if want := map[bool]string{false: "new\n", true: ""}[write]; upperNew != want {
			t.Errorf("write=%v: upper new.txt = %q, want %q", write, upperNew, want)
		}
	}
}
