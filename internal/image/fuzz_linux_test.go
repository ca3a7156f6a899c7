package image

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// FuzzUnpack feeds arbitrary archives (seeded with the hostile cases) to the
// unpacker: whatever it accepts or refuses, the directory beside the layer and a
// /tmp marker the seeds aim at stay as they were, and the layer holds no device
// but a whiteout and no set-ID file.
//
//	go test -run XXX -fuzz FuzzUnpack -fuzztime 60s ./internal/image/
func FuzzUnpack(f *testing.F) {
	const fuzzMarker = "/tmp/agentbox-image-fuzz-marker"
	testenv.RequireRoot(f)
	seedDir := f.TempDir()
	sentinel := filepath.Join(seedDir, "sentinel")
	for _, c := range hostileCases() {
		f.Add(c.tar(f, sentinel, fuzzMarker))
	}
	f.Fuzz(func(t *testing.T, archive []byte) {
		base := t.TempDir()
		sentinel := filepath.Join(base, "sentinel")
		os.Mkdir(sentinel, 0o755)
		os.WriteFile(filepath.Join(sentinel, "file"), []byte("original"), 0o644)
		before := testenv.TreeHash(t, sentinel)
		layer := filepath.Join(base, "layer")
		unpack(t.Context(), bytes.NewReader(archive), layer, Limits{FileSize: 1 << 20, LayerSize: 4 << 20, Entries: 1000})
		if testenv.TreeHash(t, sentinel) != before {
			t.Fatal("the directory beside the layer changed")
		}
		if _, err := os.Lstat(fuzzMarker); !os.IsNotExist(err) {
			os.Remove(fuzzMarker)
			t.Fatalf("host marker %s created", fuzzMarker)
		}
		filepath.WalkDir(layer, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			if m := fi.Mode(); m&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 && !(m&fs.ModeCharDevice != 0 && st.Rdev == 0) {
				t.Fatalf("%s: special file %v", p, m)
			}
			if !fi.IsDir() && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Fatalf("%s: set-ID file %v", p, fi.Mode())
			}
			return nil
		})
	})
}
