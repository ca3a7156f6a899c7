package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestIDs: the image's user, by name or number, as its own /etc/passwd and
// /etc/group (through its layers, whiteouts included) say.
func TestIDs(t *testing.T) {
	s := newStore(t)
	passwd := "root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\nold:x:1001:1001::/:/bin/sh\n"
	base := layerOf(t, mkTar(t, reg("etc/passwd", passwd), reg("etc/group", "root:x:0:\nstaff:x:50:\n"), reg("etc/shadow", "")))
	// The top layer replaces /etc/passwd without "old" and removes /etc/group.
	top := layerOf(t, mkTar(t, reg("etc/passwd", strings.Replace(passwd, "old:x:1001:1001::/:/bin/sh\n", "", 1)), reg("etc/.wh.group", "")))
	for _, c := range []struct {
		user     string
		layers   []v1.Layer
		uid, gid int
		err      string
	}{
		{"", []v1.Layer{base}, 0, 0, ""},
		{"node", []v1.Layer{base}, 1000, 1000, ""},
		{"1000", []v1.Layer{base}, 1000, 1000, ""},
		{"1234", []v1.Layer{base}, 1234, 0, ""},
		{"node:staff", []v1.Layer{base}, 1000, 50, ""},
		{"node:7", []v1.Layer{base}, 1000, 7, ""},
		{"old", []v1.Layer{base}, 1001, 1001, ""},
		{"old", []v1.Layer{base, top}, 0, 0, "no \"old\""},
		{"node:staff", []v1.Layer{base, top}, 0, 0, "image group"},
		{"nobody-here", []v1.Layer{base}, 0, 0, "no \"nobody-here\""},
		{"70000", []v1.Layer{base}, 0, 0, "outside"},
	} {
		r, err := s.Import(t.Context(), writeDockerArchive(t, imageOf(t, v1.Config{User: c.user}, c.layers...)), ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		im, err := s.Open(r.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		uid, gid, err := im.IDs()
		im.Close()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("user %q on %d layers: %d:%d, %v; want an error with %q", c.user, len(c.layers), uid, gid, err, c.err)
			}
			continue
		}
		if err != nil || uid != c.uid || gid != c.gid {
			t.Errorf("user %q: %d:%d, %v; want %d:%d", c.user, uid, gid, err, c.uid, c.gid)
		}
	}
}

// TestIDsThroughSymlinks: an image whose /etc is a symbolic link (absolute or
// relative, ".." past its root) is read through it, resolved in the image;
// a link to a host path the image lacks finds nothing, though the host has the
// file (the host never resolves an image's links); a loop is an error.
func TestIDsThroughSymlinks(t *testing.T) {
	s := newStore(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "passwd"), []byte("x:x:7:7::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	passwd := reg("host-etc/passwd", "x:x:5:5::/:/bin/sh\n")
	for _, c := range []struct {
		name  string
		files []ent
		uid   int
		err   string
	}{
		{"absolute", []ent{symlink("etc", "/host-etc"), passwd}, 5, ""},
		{"relative past the root", []ent{symlink("etc", "../../../host-etc"), passwd}, 5, ""},
		{"a link on the way", []ent{symlink("etc", "conf/host-etc"), symlink("conf", "/host-etc/.."), passwd}, 5, ""},
		{"to a host directory", []ent{symlink("etc", host)}, 0, "does not exist"},
		{"a loop", []ent{symlink("etc", "/etc")}, 0, "symbolic links"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.Import(t.Context(), writeDockerArchive(t, imageOf(t, v1.Config{User: "x"}, layerOf(t, mkTar(t, c.files...)))), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			im, err := s.Open(r.ID.String())
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			uid, _, err := im.IDs()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("IDs: uid %d, %v; want an error with %q", uid, err, c.err)
				}
				return
			}
			if err != nil || uid != c.uid {
				t.Errorf("IDs: uid %d, %v; want %d", uid, err, c.uid)
			}
		})
	}
}
