package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/landlock"
	"github.com/agentbox/agentbox/internal/testenv"
)

// gitRepo makes a repository with one commit in a fresh workspace and returns the
// workspace. layout: "dir" (.git is the repository), "file" (.git is a gitdir file
// pointing to .gitdata, as for a worktree or submodule) or "symlink" (.git is a link
// to .gitreal).
func gitRepo(t *testing.T, layout string) string {
	t.Helper()
	_, err := exec.LookPath("git")
	testenv.Require(t, err == nil, "git is not installed")
	ws := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	git("add", "a.txt")
	git("commit", "-qm", "first")
	dotgit := filepath.Join(ws, ".git")
	switch layout {
	case "file":
		if err := os.Rename(dotgit, filepath.Join(ws, ".gitdata")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dotgit, []byte("gitdir: .gitdata\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	case "symlink":
		if err := os.Rename(dotgit, filepath.Join(ws, ".gitreal")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(".gitreal", dotgit); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// treeState lists every entry under dir with its size and mode, for "unchanged".
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWorkspaceWriteGitReadOnly: with the read-write workspace, git on the host runs
// hooks and config lines (core.fsmonitor, core.hooksPath) from the repository at the
// user's next command, so the repository must stay read-only, whichever way .git
// leads to it, while the working tree stays writable and git status, log and diff
// still work. Regression test for the attack suite's TestEscape_GitHooksInWriteBind.
func TestWorkspaceWriteGitReadOnly(t *testing.T) {
	const script = `cd /workspace
		git status --porcelain >/dev/null && echo status ok
		git log --oneline | wc -l
		echo change >> a.txt && git diff --stat | grep -q a.txt && echo diff ok
		for p in $REPO/hooks/pre-commit $REPO/config $REPO/new .git; do
			(echo x >> $p) 2>/dev/null && echo "wrote $p"
		done
		rm -rf .git $REPO 2>/dev/null; mv .git moved 2>/dev/null && echo "moved .git"
		mv $REPO moved 2>/dev/null && echo "moved $REPO"
		ln $REPO/config cfg 2>/dev/null && echo linked
		git commit -qam x 2>/dev/null && echo committed
		git status --porcelain -- a.txt | tr '\n' ' '; echo`
	for _, c := range []struct{ layout, repo string }{
		{"dir", ".git"}, {"file", ".gitdata"}, {"symlink", ".gitreal"},
	} {
		t.Run(c.layout, func(t *testing.T) {
			ws := gitRepo(t, c.layout)
			before := treeState(t, filepath.Join(ws, c.repo))
			dotgit, _ := os.Readlink(filepath.Join(ws, ".git"))
			r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", script},
				Env:       []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "REPO=" + c.repo},
				Workspace: ws, WorkspaceWrite: true})
			want := "status ok\n1\ndiff ok\n M a.txt \n"
			if r.stdout != want {
				t.Errorf("stdout %q, want %q (stderr %q)", r.stdout, want, r.stderr)
			}
			if after := treeState(t, filepath.Join(ws, c.repo)); after != before {
				t.Errorf("the host repository changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			if got, _ := os.Readlink(filepath.Join(ws, ".git")); got != dotgit {
				t.Errorf(".git link is %q, was %q", got, dotgit)
			}
			if got := readFile(t, filepath.Join(ws, "a.txt")); got != "a\nchange\n" {
				t.Errorf("the working tree is not writable: a.txt = %q", got)
			}
		})
	}
}

// TestGitPaths: what the host protects for each shape of .git, relative to the
// workspace; repositories outside the workspace are not the sandbox's to reach.
func TestGitPaths(t *testing.T) {
	outside := t.TempDir()
	for _, c := range []struct {
		name  string
		setup func(ws string) error
		want  []string
	}{
		{"none", func(string) error { return nil }, nil},
		{"dir", func(ws string) error { return os.Mkdir(filepath.Join(ws, ".git"), 0o755) }, []string{".git"}},
		{"gitdir relative", func(ws string) error {
			return gitdirFile(ws, "sub/real", "gitdir: sub/real\n")
		}, []string{".git", "sub/real"}},
		{"gitdir absolute inside", func(ws string) error {
			return gitdirFile(ws, "real", "gitdir: "+filepath.Join(ws, "real")+"\n")
		}, []string{".git", "real"}},
		{"gitdir outside", func(ws string) error {
			return gitdirFile(ws, "", "gitdir: "+outside+"\n")
		}, []string{".git"}},
		{"gitdir escaping", func(ws string) error {
			return gitdirFile(ws, "", "gitdir: ../"+filepath.Base(outside)+"\n")
		}, []string{".git"}},
		{"gitdir through a link", func(ws string) error {
			if err := gitdirFile(ws, "real", "gitdir: alias\n"); err != nil {
				return err
			}
			return os.Symlink("real", filepath.Join(ws, "alias"))
		}, []string{".git", "real"}},
		{"not a gitdir file", func(ws string) error {
			return gitdirFile(ws, "", "something else\n")
		}, []string{".git"}},
		{"symlink inside", func(ws string) error {
			if err := os.Mkdir(filepath.Join(ws, "r"), 0o755); err != nil {
				return err
			}
			return os.Symlink("r", filepath.Join(ws, ".git"))
		}, []string{".git", "r"}},
		{"symlink outside", func(ws string) error { return os.Symlink(outside, filepath.Join(ws, ".git")) }, []string{".git"}},
		{"symlink to the workspace", func(ws string) error { return os.Symlink(".", filepath.Join(ws, ".git")) }, []string{".git"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := c.setup(ws); err != nil {
				t.Fatal(err)
			}
			if got := gitPaths(ws); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("gitPaths = %q, want %q", got, c.want)
			}
		})
	}
}

// gitdirFile writes ws/.git with content and creates ws/dir if dir is set.
func gitdirFile(ws, dir, content string) error {
	if dir != "" {
		if err := os.MkdirAll(filepath.Join(ws, dir), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(ws, ".git"), []byte(content), 0o644)
}

// unixProbe tries, from inside, every way to reach a pathname Unix socket: a stream
// connect, a datagram sendto, and re-aiming both kinds of socketpair; and checks that
// the sandbox can still use Unix sockets of its own where that is allowed.
const unixProbe = `
import errno, socket
def attempt(name, f):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def own():
    srv = socket.socket(socket.AF_UNIX); srv.bind("/tmp/own.sock"); srv.listen()
    socket.socket(socket.AF_UNIX).connect("/tmp/own.sock")
attempt("own", own)
attempt("stream", lambda: socket.socket(socket.AF_UNIX).connect("/workspace/host.sock"))
attempt("seqpacket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).connect("/workspace/host.seq"))
attempt("dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", "/workspace/host.dgram"))
def reaim(kind, path):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.connect(path)
attempt("pair-stream", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("reaim-stream", lambda: reaim(socket.SOCK_STREAM, "/workspace/host.sock"))
attempt("reaim-seqpacket", lambda: reaim(socket.SOCK_SEQPACKET, "/workspace/host.seq"))
attempt("reaim-dgram", lambda: reaim(socket.SOCK_DGRAM, "/workspace/host.dgram"))
attempt("reaim-raw", lambda: reaim(socket.SOCK_RAW, "/workspace/host.dgram"))
`

// TestWorkspaceWriteUnixSockets: a network namespace does not cover pathname Unix
// sockets, so with the read-write workspace a host daemon's socket file there would
// be reachable (the overlay shows other inodes: ECONNREFUSED). Below Landlock ABI 9
// the write mode therefore has no Unix sockets but connected stream and seqpacket
// pairs; from ABI 9 Landlock denies the host's sockets and the sandbox keeps its own.
// Regression test for the attack suite's TestEscape_NetworkReachesHost/sandbox-write-bind.
func TestWorkspaceWriteUnixSockets(t *testing.T) {
	_, err := exec.LookPath("python3")
	testenv.Require(t, err == nil, "python3 is not installed")
	writeWant := "own EPERM\nstream EPERM\nseqpacket EPERM\ndgram EPERM\npair-stream ok\nreaim-stream EISCONN\n" +
		"reaim-seqpacket EISCONN\nreaim-dgram EPERM\nreaim-raw EPERM\n"
	if landlock.ABI() >= resolveUnixABI {
		writeWant = "own ok\nstream EACCES\nseqpacket EACCES\ndgram EACCES\npair-stream ok\nreaim-stream EISCONN\n" +
			"reaim-seqpacket EISCONN\nreaim-dgram EACCES\nreaim-raw EACCES\n"
	}
	for _, c := range []struct {
		name  string
		write bool
		want  string
	}{
		// The lookup fails before a connected pair's state is checked.
		{"overlay", false, "own ok\nstream ECONNREFUSED\nseqpacket ECONNREFUSED\ndgram ECONNREFUSED\npair-stream ok\n" +
			"reaim-stream ECONNREFUSED\nreaim-seqpacket ECONNREFUSED\nreaim-dgram ECONNREFUSED\nreaim-raw ECONNREFUSED\n"},
		{"write", true, writeWant},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			reached := listenUnix(t, filepath.Join(ws, "host.sock"), filepath.Join(ws, "host.seq"), filepath.Join(ws, "host.dgram"))
			r := runIn(t, Config{Argv: []string{"/usr/bin/python3", "-c", unixProbe}, Env: []string{"PATH=/usr/bin:/bin"},
				Workspace: ws, WorkspaceWrite: c.write})
			if r.stdout != c.want {
				t.Errorf("got\n%s\nwant\n%s\nstderr: %s", r.stdout, c.want, r.stderr)
			}
			if got := reached(); len(got) != 0 {
				t.Errorf("the host's sockets were reached: %q", got)
			}
		})
	}
}

// listenUnix binds listening stream and seqpacket sockets and a datagram socket at
// the given paths and returns a function that reports what reached them. Unix sockets queue
// synchronously: a connect or sendto that succeeded has queued its connection or
// datagram before it returned, so once the run is over a non-blocking accept and
// receive see everything.
func listenUnix(t *testing.T, stream, seqpacket, dgram string) func() []string {
	t.Helper()
	open := func(typ int, path string) int {
		fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			t.Fatal(err)
		}
		// The workspace owner's (root's), as a daemon's would be; connectable by
		// anyone, so only the sandbox stands in the way.
		if err := os.Chmod(path, 0o777); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	listeners := []int{open(unix.SOCK_STREAM, stream), open(unix.SOCK_SEQPACKET, seqpacket)}
	for _, fd := range listeners {
		if err := unix.Listen(fd, 8); err != nil {
			t.Fatal(err)
		}
	}
	dfd := open(unix.SOCK_DGRAM, dgram)
	return func() []string {
		var got []string
		for i, fd := range listeners {
			for {
				nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
				if err != nil {
					break
				}
				unix.Close(nfd)
				got = append(got, []string{stream, seqpacket}[i]+" accepted a connection")
			}
		}
		buf := make([]byte, 64)
		for {
			n, _, err := unix.Recvfrom(dfd, buf, unix.MSG_DONTWAIT)
			if err != nil {
				break
			}
			got = append(got, "datagram "+string(buf[:n]))
		}
		return got
	}
}
