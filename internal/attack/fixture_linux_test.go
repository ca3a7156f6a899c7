package attack

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fixture is the host side of one attack: a workspace holding a copy of the attacker,
// secrets outside the workspace that the sandbox must not reach, and snapshots to
// prove afterwards that nothing on the host changed.
type fixture struct {
	t      *testing.T
	dir    string // private host directory of this test (mode 0755)
	ws     string // host workspace: passed as --workspace
	home   string // a host home directory full of secrets (HOME of agentbox)
	canary string // a host file outside the workspace holding the secret
	secret string // random; must never appear in anything the sandbox produces
	tag    string // random; in the argv of every attacker process

	protected  []string // host files that must stay unchanged
	before     map[string]fileState
	wsBefore   map[string]fileState
	wsWritable bool     // --write: the workspace may change
	directEnv  []string // extra environment of control runs

	mu      sync.Mutex
	victims []*victim
}

// fileState is what "unchanged" means for a host file: content, mode, owner, link
// count, inode and mtime.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime int64
	nlink uint64
	ino   uint64
	uid   uint32
	sum   string // sha256 of the content, or the link target
}

func (s fileState) String() string {
	return fmt.Sprintf("mode %v size %d mtime %d nlink %d ino %d uid %d sum %.12s", s.mode, s.size, s.mtime, s.nlink, s.ino, s.uid, s.sum)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randUint32() uint32 {
	b := make([]byte, 4)
	rand.Read(b)
	return binary.LittleEndian.Uint32(b)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentbox-attack-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	fx := &fixture{
		t:      t,
		dir:    dir,
		ws:     filepath.Join(dir, "ws"),
		home:   filepath.Join(dir, "home"),
		canary: filepath.Join(dir, "canary-secret.txt"),
		secret: "agentbox-secret-" + randHex(12),
		tag:    "agentbox-tag-" + randHex(8),
	}
	files := map[string]string{
		fx.canary:                         fx.secret + "\n",
		filepath.Join(fx.home, ".bashrc"): "export TOKEN=" + fx.secret + "\n",
		filepath.Join(fx.home, ".ssh/authorized_keys"): "ssh-ed25519 AAAA " + fx.secret + "\n",
		filepath.Join(fx.home, ".ssh/id_ed25519"):      "-----BEGIN OPENSSH PRIVATE KEY-----\n" + fx.secret + "\n",
		filepath.Join(fx.home, ".aws/credentials"):     "[default]\naws_secret_access_key = " + fx.secret + "\n",
		filepath.Join(fx.home, ".env"):                 "API_KEY=" + fx.secret + "\n",
		filepath.Join(fx.ws, "README.md"):              "a workspace\n",
		filepath.Join(fx.ws, "lockfile"):               "",
		filepath.Join(fx.ws, ".git/HEAD"):              "ref: refs/heads/main\n",
		filepath.Join(fx.ws, ".git/config"):            "[core]\n\trepositoryformatversion = 0\n",
		filepath.Join(fx.ws, ".git/hooks/pre-commit"):  "#!/bin/sh\nexit 0\n",
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, fx.ws) {
			fx.protected = append(fx.protected, p)
		}
	}
	os.Chmod(filepath.Join(fx.ws, ".git/hooks/pre-commit"), 0o755)
	copyFile(t, tools.attacker, filepath.Join(fx.ws, "attacker"), 0o755)
	return fx
}

// sibling is a second sandbox's view of the same host fixture: same workspace,
// secrets and snapshots, its own tag (so that its processes are told apart).
func (fx *fixture) sibling() *fixture {
	return &fixture{
		t: fx.t, dir: fx.dir, ws: fx.ws, home: fx.home, canary: fx.canary, secret: fx.secret,
		tag: "agentbox-tag-" + randHex(8), protected: fx.protected, before: fx.before,
		wsBefore: fx.wsBefore, wsWritable: fx.wsWritable,
	}
}

// protect adds host paths (outside the fixture) whose state must not change.
func (fx *fixture) protect(paths ...string) { fx.protected = append(fx.protected, paths...) }

// snapshot records the state of the protected files and of the workspace; call it
// after the fixture is complete and before the run.
func (fx *fixture) snapshot() {
	fx.before = map[string]fileState{}
	for _, p := range fx.protected {
		fx.before[p] = statFile(p)
	}
	fx.wsBefore = treeState(fx.ws)
}

// verifyFiles reports every protected file and (unless the workspace is writable)
// every workspace entry that changed since the snapshot.
func (fx *fixture) verifyFiles() []string {
	var diffs []string
	for _, p := range fx.protected {
		if now := statFile(p); now != fx.before[p] {
			diffs = append(diffs, fmt.Sprintf("host file %s changed: before %v, after %v", p, fx.before[p], now))
		}
	}
	if !fx.wsWritable {
		now := treeState(fx.ws)
		diffs = append(diffs, diffTrees("host workspace", fx.wsBefore, now)...)
	}
	return diffs
}

func statFile(p string) fileState {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fileState{sum: "absent: " + err.Error()}
	}
	s := fileState{
		mode: fs.FileMode(st.Mode), size: st.Size, mtime: st.Mtim.Nano(),
		nlink: st.Nlink, ino: st.Ino, uid: st.Uid,
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		target, _ := os.Readlink(p)
		s.sum = "-> " + target
	case syscall.S_IFREG:
		b, _ := os.ReadFile(p)
		h := sha256.Sum256(b)
		s.sum = hex.EncodeToString(h[:])
	}
	return s
}

// treeState records every entry below root without following links.
func treeState(root string) map[string]fileState {
	m := map[string]fileState{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		st := statFile(p)
		if d.IsDir() {
			st.mtime = 0 // reading a directory through an overlay may update atime, never mtime; keep it strict on files
			st.size = 0
		}
		m[rel] = st
		return nil
	})
	return m
}

func diffTrees(what string, before, after map[string]fileState) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s was removed", what, p))
		case a != b:
			out = append(out, fmt.Sprintf("%s: %s changed: before %v, after %v", what, p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s: %s appeared", what, p))
		}
	}
	sort.Strings(out)
	return out
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(to, mode)
}

// hostRel returns p relative to the host root, for walks that climb to "/".
func hostRel(p string) string { return strings.TrimPrefix(p, "/") }
