package attack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscape_HostMounts (--mount, issue 12): a host directory mounted into the
// sandbox must be reached only as the mount says, and only the directory named.
//   - Read-only: every write, create, rename, link, chmod and removal in it fails
//     (EROFS, or EACCES where the file's unmapped owner refuses first), and the
//     host directory is unchanged.
//   - Copy-on-write: writes succeed inside, reach nothing on the host, and a second
//     run sees the directory as it was.
//   - A source that is a symlink, has a symlink among its parents, or holds ".."
//     is refused before anything runs: a link planted in the path would mount what
//     it points to (here the directory holding the host secret).
//   - A target over the sandbox's own directories (/workspace's parent, /proc,
//     /dev, /usr) is refused.
//
// The control writes the same files on the host directly and sees them land, and a
// read-write mount lets the sandbox change the host directory: the checks see a
// change when there is one.
func TestEscape_HostMounts(t *testing.T) {
	t.Parallel()
	ops := func(dir string) []string {
		return []string{
			"write:" + dir + "/new.txt:PWNED",
			"append:" + dir + "/data.txt:PWNED",
			"unlink:" + dir + "/data.txt",
			"rename:" + dir + "/data.txt:" + dir + "/moved.txt",
			"link:" + dir + "/data.txt:" + dir + "/hl.txt",
			"mkdir:" + dir + "/sub",
			"chmod:" + dir + "/data.txt:4777",
			"symlink:/etc/passwd:" + dir + "/link",
		}
	}
	newShared := func(t *testing.T, fx *fixture) (string, map[string]fileState) {
		t.Helper()
		dir := filepath.Join(fx.dir, "shared")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("cache entry\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir, treeState(dir)
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		dir, before := newShared(t, fx)
		at := fx.direct(0, nil, append([]string{"fsops"}, ops(dir)...)...)
		at.mustSucceed(t, "control without a sandbox", "0:write:"+dir+"/new.txt")
		if d := diffTrees("shared", before, treeState(dir)); len(d) == 0 {
			t.Error("control: the host directory did not change, so the checks below prove nothing")
		}
	})
	t.Run("read-only", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		dir, before := newShared(t, fx)
		r := fx.run(boxOpts{flags: []string{"--mount", dir + ":/opt/shared:ro"},
			cmd: fx.attack("fsops", append([]string{"read:/opt/shared/data.txt"}, ops("/opt/shared")...)...)})
		r.at.mustBeDone(t, "fsops")
		r.at.mustSucceed(t, "reading a read-only mount", "0:read:/opt/shared/data.txt")
		// EACCES where the file's owner (root, unmapped) denies it before the mount does.
		r.at.mustFailWith(t, "writing a read-only mount", []string{"EROFS", "EACCES"}, r.at.withPrefix("")[1:]...)
		fx.verifyHost(r)
		if d := diffTrees("shared", before, treeState(dir)); len(d) > 0 {
			t.Errorf("HOST CHANGED through a read-only mount: %s", strings.Join(d, "; "))
		}
	})
	t.Run("copy-on-write", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		dir, before := newShared(t, fx)
		flags := []string{"--mount", dir + ":/opt/shared:cow"}
		r := fx.run(boxOpts{flags: flags, cmd: fx.attack("fsops", ops("/opt/shared")[:2]...)})
		r.at.mustSucceed(t, "writing a copy-on-write mount", r.at.withPrefix("")...)
		fx.verifyHost(r)
		if d := diffTrees("shared", before, treeState(dir)); len(d) > 0 {
			t.Errorf("HOST CHANGED through a copy-on-write mount: %s", strings.Join(d, "; "))
		}
		r = fx.run(boxOpts{flags: flags, cmd: fx.attack("fsops", "read:/opt/shared/data.txt", "stat:/opt/shared/new.txt")})
		if at, _ := r.at.get(t, "0:read:/opt/shared/data.txt"); !at.ok || strings.Contains(at.detail, "PWNED") {
			t.Errorf("a second run reads %q: the first run's writes outlived it", at.detail)
		}
		r.at.mustFailWith(t, "a file the first run made", []string{"ENOENT"}, "1:stat:/opt/shared/new.txt")
	})
	t.Run("read-write control", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		dir, before := newShared(t, fx)
		r := fx.run(boxOpts{flags: []string{"--mount", dir + ":/opt/shared:rw"}, cmd: fx.attack("fsops", "write:/opt/shared/new.txt:mine")})
		r.at.mustSucceed(t, "writing a read-write mount", "0:write:/opt/shared/new.txt")
		if d := diffTrees("shared", before, treeState(dir)); len(d) == 0 {
			t.Error("a read-write mount's write did not reach the host")
		}
	})
	t.Run("refused", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		dir, _ := newShared(t, fx)
		secretDir := filepath.Dir(fx.canary)
		link := filepath.Join(fx.dir, "link")
		if err := os.Symlink(secretDir, link); err != nil {
			t.Fatal(err)
		}
		linkedParent := filepath.Join(fx.dir, "via")
		if err := os.Symlink(fx.dir, linkedParent); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ mount, msg string }{
			{link + ":/opt/m", "is a symlink"},
			{linkedParent + "/shared:/opt/m", "symlink"},
			{dir + "/../shared:/opt/m", "not a clean path"},
			{dir + ":/opt/../workspace/m", "not a clean path"},
			{dir + ":/workspace/m", "the sandbox's own"},
			{dir + ":/proc/m", "the sandbox's own"},
			{dir + ":/dev", "the sandbox's own"},
			{dir + ":/usr/local", "the sandbox's own"},
			{dir + ":/", "its own"},
			{dir + ":/opt/m:exec", "mode"},
			{"shared:/opt/m", "not an absolute path"},
		} {
			r := fx.run(boxOpts{plain: true, flags: []string{"--mount", tc.mount}, cmd: fx.attack("fsops", "read:/opt/m/canary-secret.txt")})
			if r.exit != 125 || !strings.Contains(r.rawErr, tc.msg) {
				t.Errorf("--mount %s: exit %d, stderr %q; want 125 and %q", tc.mount, r.exit, r.rawErr, tc.msg)
			}
			if strings.Contains(r.raw+r.rawErr, fx.secret) {
				t.Errorf("--mount %s: the host secret reached the run's output", tc.mount)
			}
		}
	})
}
