package tool

import (
	"io/fs"
	"testing"

	"github.com/agentbox/agentbox/internal/workspace"
)

// fakeTree is a workspace of directories, files and symlinks for resolveLinks,
// described as workspace.Root.Stat would: a symlink is not followed.
type fakeTree map[string]string // path → "dir", "file" or "->target"

func (ft fakeTree) stat(p string) (workspace.Entry, error) {
	v, ok := ft[p]
	switch {
	case !ok:
		return workspace.Entry{}, fs.ErrNotExist
	case v == "dir":
		return workspace.Entry{Path: p, Mode: fs.ModeDir}, nil
	case v == "file":
		return workspace.Entry{Path: p}, nil
	}
	return workspace.Entry{Path: p, Mode: fs.ModeSymlink, LinkTarget: v[2:]}, nil
}

// TestResolveLinks: the table of what a path reaches: links at the end and on
// the way, relative and absolute, chains, climbs out, loops, names that do not
// exist yet.
func TestResolveLinks(t *testing.T) {
	ft := fakeTree{
		".env": "file", ".ssh": "dir", ".ssh/config": "file", ".git": "dir", ".git/hooks": "dir",
		"src": "dir", "src/a.go": "file",
		"notes.txt":  "->.env",
		"cfg":        "->.ssh",
		"g":          "->./.git",
		"abs":        "->/workspace/.env",
		"absout":     "->/etc/passwd",
		"src/up":     "->../.env",
		"src/out":    "->../../etc",
		"chain1":     "->chain2",
		"chain2":     "->src/up",
		"loop":       "->loop",
		"dangling":   "->missing/../.env",
		"src/self":   "->.",
		"workspacex": "->/workspacex/y",
	}
	for _, tc := range []struct{ in, want string }{
		{".", "."},
		{"src/a.go", "src/a.go"},
		{"notes.txt", ".env"},
		{"cfg/config", ".ssh/config"},
		{"cfg", ".ssh"},
		{"g/hooks", ".git/hooks"},
		{"abs", ".env"},
		{"absout", "/etc/passwd"},
		{"src/up", ".env"},
		{"src/out/passwd", "/.."},
		{"chain1", ".env"},
		{"dangling", ".env"},
		{"src/self/self/a.go", "src/a.go"},
		{"workspacex", "/workspacex/y"},
		{"new/file.txt", "new/file.txt"},
		{"cfg/new-key", ".ssh/new-key"},
	} {
		got, err := resolveLinks(ft.stat, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
	if got, err := resolveLinks(ft.stat, "loop"); err == nil {
		t.Errorf("a symlink loop resolved to %q", got)
	}
}
