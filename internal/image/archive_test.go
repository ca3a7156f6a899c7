package image

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"
)

// ent is one entry of a test archive.
type ent struct {
	tar.Header
	data string
}

func reg(name, data string) ent {
	return ent{Header: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}, data: data}
}

func dir(name string) ent {
	return ent{Header: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
}

func symlink(name, target string) ent {
	return ent{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

func hardlink(name, target string) ent {
	return ent{Header: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}}
}

var testTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// mkTar writes the entries as a PAX archive. Sizes of regular files default to
// their data's length.
func mkTar(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.Header
		if h.ModTime.IsZero() {
			h.ModTime = testTime
		}
		if h.Format == tar.FormatUnknown {
			h.Format = tar.FormatPAX
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("write header %q: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatalf("write %q: %v", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
