package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// ociArchiveEntry is what is taken from an OCI archive: the layout's marker, its
// index and its blobs. Other entries (a docker-save manifest.json beside them)
// are skipped, so no name from the archive reaches the file system unchecked.
var ociArchiveEntry = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(oci-layout|index\.json|blobs/sha256/[0-9a-f]{64})$`)
})

// extractOCIArchive writes the OCI layout in archive file into dir (empty).
// Blobs are checked against their digests when they are read (layers by their
// diff_id, the config by the image id).
func extractOCIArchive(ctx context.Context, file, dir string, lim Limits) error {
	lim = lim.withDefaults()
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		return err
	}
	tr := tar.NewReader(ctxReader{ctx, f})
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		if n >= lim.Entries {
			return &LimitError{What: "archive has too many entries", Field: "Entries", Limit: int64(lim.Entries)}
		}
		name, err := cleanName(h.Name)
		if err != nil {
			return &EntryError{Entry: h.Name, Err: err}
		}
		if h.Typeflag != tar.TypeReg || !ociArchiveEntry().MatchString(name) {
			continue
		}
		if h.Size > lim.LayerSize {
			return &LimitError{What: fmt.Sprintf("archive entry %q is %d bytes", name, h.Size), Field: "LayerSize", Limit: lim.LayerSize}
		}
		out, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return &EntryError{Entry: h.Name, Err: err}
		}
		_, err = io.Copy(out, io.LimitReader(tr, h.Size))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &EntryError{Entry: h.Name, Err: err}
		}
	}
}
