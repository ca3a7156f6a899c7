package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
	r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", workspaceScript}, Workspace: ws, KeepUpper: true})
	upper := r.sb.UpperDir()
	if upper == "" {
		t.Fatal("no upper dir")
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(upper)) })
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
	// The upper layer has the changes, owned by the sandbox's host uid.
	for name, want := range map[string]string{"new.txt": "new\n", "a.txt": "mod\n", "sub/d.txt": "deep\n"} {
		p := filepath.Join(upper, name)
		if got := readFile(t, p); got != want {
			t.Errorf("upper %s = %q, want %q", name, got, want)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil || int(st.Uid) != r.sb.HostUID() {
			t.Errorf("upper %s owner %d (%v), want %d", name, st.Uid, err, r.sb.HostUID())
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(upper, "b.txt"), &st); err != nil ||
		st.Mode&syscall.S_IFMT != syscall.S_IFCHR || st.Rdev != 0 {
		t.Errorf("upper b.txt is not a whiteout (0:0 character device): mode %o rdev %d err %v", st.Mode, st.Rdev, err)
	}
	// KeepUpper keeps upper/ but not overlay's scratch directory.
	if _, err := os.Stat(filepath.Join(filepath.Dir(upper), "work")); !os.IsNotExist(err) {
		t.Errorf("work dir kept: %v", err)
	}
}

// TestWorkspaceUpperRemoved: without KeepUpper, Destroy removes the upper layer.
func TestWorkspaceUpperRemoved(t *testing.T) {
	r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", "echo x > /workspace/f"}, Workspace: workspaceFixture(t)})
	if r.exit.ExitCode != 0 {
		t.Fatalf("exit %+v, stderr %q", r.exit, r.stderr)
	}
	if _, err := os.Stat(filepath.Dir(r.sb.UpperDir())); !os.IsNotExist(err) {
		t.Errorf("upper layer still there after Destroy: %v", err)
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
		r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", script}, Workspace: ws, WorkspaceWrite: write,
			RootFS: "/", StateDir: "/tmp", KeepUpper: true})
		if r.stdout != "lower a\nnobody\nnew\n" {
			t.Errorf("write=%v: stdout %q stderr %q setup %v", write, r.stdout, r.stderr, r.exit.SetupErr)
		}
		_, err := os.Stat(filepath.Join(ws, "new.txt"))
		if write == os.IsNotExist(err) {
			t.Errorf("write=%v: host new.txt: %v", write, err)
		}
		if up := r.sb.UpperDir(); up != "" {
			if got, _ := os.ReadFile(filepath.Join(up, "new.txt")); string(got) != "new\n" {
				t.Errorf("upper new.txt = %q", got)
			}
			os.RemoveAll(filepath.Dir(up))
		}
	}
}
