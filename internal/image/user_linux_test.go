package image

import (
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

// TestReadMergedNoSymlinks: the host never resolves an image's symlinks.
func TestReadMergedNoSymlinks(t *testing.T) {
	s := newStore(t)
	r, err := s.Import(t.Context(), writeDockerArchive(t, imageOf(t, v1.Config{User: "x"},
		layerOf(t, mkTar(t, symlink("etc", "/host-etc"), reg("host-etc/passwd", "x:x:5:5::/:/bin/sh\n"))))), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	im, err := s.Open(r.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if _, _, err := im.IDs(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("IDs through a symlinked /etc: %v", err)
	}
}
