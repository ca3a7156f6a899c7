package env

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestOutputSpill: an output keeps a stream in memory up to spillMemory and
// then in its file, whole either way, and removes the file.
func TestOutputSpill(t *testing.T) {
	for _, n := range []int{0, 10, spillMemory, spillMemory + 1, 5 * spillMemory} {
		path := filepath.Join(t.TempDir(), "out")
		var seen bytes.Buffer
		o := &output{path: path, next: &seen}
		want := bytes.Repeat([]byte("0123456789abcde\n"), n/16+1)[:n]
		for p := want; len(p) > 0; {
			k := min(len(p), 4000)
			o.Write(p[:k])
			p = p[k:]
		}
		_, err := os.Lstat(path)
		if spilled := err == nil; spilled != (n > spillMemory) {
			t.Errorf("%d bytes: spilled to a file: %v", n, spilled)
		}
		r, size, err := o.stream()
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, _ := io.ReadAll(r)
		if size != int64(n) || !bytes.Equal(got, want) || !bytes.Equal(seen.Bytes(), want) {
			t.Errorf("%d bytes: stream of %d (%d read, %d passed on)", n, size, len(got), seen.Len())
		}
		o.remove()
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%d bytes: file left after remove: %v", n, err)
		}
	}
}

// TestOutputPlantedLink: a link planted where an output would spill is never
// followed (the daemon writes there as root, with what the command chose): the
// spill fails, the stream is reported incomplete, and the link's target is
// unchanged.
func TestOutputPlantedLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	o := &output{path: path}
	if n, err := o.Write(make([]byte, spillMemory+1)); n != spillMemory+1 || err != nil {
		t.Fatalf("Write = %d, %v: the drain must go on", n, err)
	}
	if _, _, err := o.stream(); err == nil {
		t.Fatal("stream of a failed spill: no error")
	}
	if b, _ := os.ReadFile(target); string(b) != "secret" {
		t.Fatalf("the link's target was written: %q", b)
	}
	o.remove()
}
