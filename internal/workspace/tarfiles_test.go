package workspace

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTarFiles: the named files only, parent directories first (shallowest
// first), a symlink as a link and never followed, and anything else refused.
func TestTarFiles(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "c.txt"), []byte("cee"), 0o600)
	os.WriteFile(filepath.Join(dir, "top.txt"), []byte("top"), 0o644)
	os.WriteFile(filepath.Join(dir, "left-out.txt"), []byte("no"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "a", "link"))
	var buf bytes.Buffer
	if err := TarFiles(&buf, dir, []string{"a/b/c.txt", "top.txt", "a/link"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got = append(got, h.Name+" "+string(rune(h.Typeflag))+" "+h.Linkname+string(b))
	}
	want := []string{"a/ 5 ", "a/b/ 5 ", "a/b/c.txt 0 cee", "top.txt 0 top", "a/link 2 /etc/passwd"}
	if !slices.Equal(got, want) {
		t.Fatalf("entries\n%q\nwant\n%q", got, want)
	}
	if err := TarFiles(io.Discard, dir, []string{"a/b"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory named as a file: %v", err)
	}
}
