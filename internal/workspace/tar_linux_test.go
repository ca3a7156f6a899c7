package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTarRoundTrip(t *testing.T) {
	h := newHostileTree(t)
	os.Remove(filepath.Join(h.root, "hard"))
	writeTree(t, h.root, map[string]string{"run.sh": "x:#!/bin/sh\n", "nl\nname": "odd", "e/mpty": "/"})
	r := h.open(t, Options{})
	var buf bytes.Buffer
	if err := r.TarTo(&buf, "."); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(secret)) {
		t.Fatal("the archive holds the canary's content")
	}
	if err := r.UntarFrom(bytes.NewReader(buf.Bytes()), "copy"); !errors.Is(err, ErrEscape) {
		// The tree's own escaping symlinks are refused on the way back in.
		t.Fatalf("UntarFrom of escaping links: %v", err)
	}
	// Without them, the copy is exact (the fifo is not archived).
	for _, l := range []string{"abs", "rel", "dirlink", "absdir", "sub/deep", "sub/dotup"} {
		os.Remove(filepath.Join(h.root, l))
	}
	os.RemoveAll(filepath.Join(h.root, "copy"))
	buf.Reset()
	if err := r.TarTo(&buf, "."); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	r2, err := OpenRoot(dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := r2.UntarFrom(&buf, "."); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(snapshot(t, h.root), snapshot(t, dst)); d != "" {
		t.Fatal(d)
	}
	if fi, err := os.Stat(filepath.Join(dst, "e/mpty")); err != nil || !fi.IsDir() {
		t.Fatalf("empty directory: %v", err)
	}
	// A single file is archived under its base name.
	buf.Reset()
	if err := r.TarTo(&buf, "sub/x"); err != nil {
		t.Fatal(err)
	}
	if hdr, err := tar.NewReader(&buf).Next(); err != nil || hdr.Name != "x" {
		t.Fatalf("single file entry: %+v, %v", hdr, err)
	}
	// Hardlinks follow the read rule; limits apply.
	os.Link(h.canary, filepath.Join(h.root, "hard"))
	if err := r.TarTo(io.Discard, "."); !errors.Is(err, ErrHardlink) {
		t.Fatalf("TarTo with a hardlink: %v", err)
	}
	os.Remove(filepath.Join(h.root, "hard"))
	if err := h.open(t, Options{MaxEntries: 3}).TarTo(io.Discard, "."); !errors.Is(err, ErrLimit) {
		t.Fatalf("TarTo over MaxEntries: %v", err)
	}
	if err := h.open(t, Options{MaxTotalBytes: 10}).TarTo(io.Discard, "."); !errors.Is(err, ErrLimit) {
		t.Fatalf("TarTo over MaxTotalBytes: %v", err)
	}
	os.Symlink("../outside", filepath.Join(h.root, "esc"))
	if err := r.TarTo(io.Discard, "esc/dir"); !errors.Is(err, ErrEscape) {
		t.Fatalf("TarTo through an escaping link: %v", err)
	}
	buf.Reset()
	if err := r.TarTo(&buf, "esc"); err != nil || bytes.Contains(buf.Bytes(), []byte(secret)) {
		t.Fatalf("TarTo of an escaping link: %v", err)
	}
	h.check(t)
}

func TestUntarRejects(t *testing.T) {
	type ent struct {
		name string
		typ  byte
		body string
		link string
	}
	tests := []struct {
		name string
		ents []ent
		err  error
		dest string
	}{
		{"dotdot", []ent{{name: "../evil", typ: tar.TypeReg, body: "x"}}, ErrEscape, ""},
		{"inner dotdot", []ent{{name: "a/../../evil", typ: tar.TypeReg, body: "x"}}, ErrEscape, ""},
		{"harmless dotdot is refused too", []ent{{name: "a/../b", typ: tar.TypeReg, body: "x"}}, ErrEscape, ""},
		{"absolute", []ent{{name: "/tmp/evil", typ: tar.TypeReg, body: "x"}}, ErrEscape, ""},
		{"absolute symlink", []ent{{name: "l", typ: tar.TypeSymlink, link: "/etc"}}, ErrEscape, ""},
		{"escaping symlink", []ent{{name: "d/l", typ: tar.TypeSymlink, link: "../../../outside"}}, ErrEscape, ""},
		{"symlink then through it", []ent{{name: "l", typ: tar.TypeSymlink, link: "../../outside"}, {name: "l/evil", typ: tar.TypeReg, body: "x"}}, ErrEscape, ""},
		{"existing escaping link", []ent{{name: "preexisting/evil", typ: tar.TypeReg, body: "x"}}, ErrEscape, "."},
		{"existing escaping link as dest", []ent{{name: "evil", typ: tar.TypeReg, body: "x"}}, ErrEscape, "preexisting"},
		{"link resolving inside from dest", []ent{{name: "d/l", typ: tar.TypeSymlink, link: "../../outside"}}, nil, ""},
		{"hardlink", []ent{{name: "h", typ: tar.TypeLink, link: "../outside/canary"}}, ErrNotRegular, ""},
		{"char device", []ent{{name: "dev", typ: tar.TypeChar}}, ErrNotRegular, ""},
		{"fifo", []ent{{name: "fifo", typ: tar.TypeFifo}}, ErrNotRegular, ""},
		{"file too big", []ent{{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 100)}}, ErrTooLarge, ""},
		{"too many", []ent{{name: "1", typ: tar.TypeDir}, {name: "2", typ: tar.TypeDir}, {name: "3", typ: tar.TypeDir}, {name: "4", typ: tar.TypeDir}, {name: "5", typ: tar.TypeDir}}, ErrLimit, ""},
		{"total too big", []ent{{name: "a", typ: tar.TypeReg, body: strings.Repeat("x", 60)}, {name: "b", typ: tar.TypeReg, body: strings.Repeat("x", 60)}}, ErrLimit, ""},
		{"inner symlink is fine", []ent{{name: "d/", typ: tar.TypeDir}, {name: "l", typ: tar.TypeSymlink, link: "d"}, {name: "l/f", typ: tar.TypeReg, body: "ok"}, {name: "./", typ: tar.TypeDir}}, nil, ""},
		{"setuid stripped", []ent{{name: "suid", typ: tar.TypeReg, body: "x"}}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostileTree(t)
			os.Symlink("../outside", filepath.Join(h.root, "preexisting"))
			h.outsideList = h.listOutside(t)
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, e := range tc.ents {
				hd := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Size: int64(len(e.body)), Mode: 0o4755}
				if err := tw.WriteHeader(hd); err != nil {
					t.Fatal(err)
				}
				io.WriteString(tw, e.body)
			}
			tw.Close()
			r := h.open(t, Options{MaxFileBytes: 64, MaxTotalBytes: 100, MaxEntries: 4})
			dest := tc.dest
			if dest == "" {
				dest = "x"
			}
			err := r.UntarFrom(&buf, dest)
			if !errors.Is(err, tc.err) {
				t.Fatalf("UntarFrom = %v, want %v", err, tc.err)
			}
			noHostPath(t, h, err)
			if tc.name == "inner symlink is fine" {
				if data, _ := os.ReadFile(filepath.Join(h.root, "x/d/f")); string(data) != "ok" {
					t.Fatalf("x/d/f = %q", data)
				}
			}
			if tc.name == "setuid stripped" {
				if fi, _ := os.Stat(filepath.Join(h.root, "x/suid")); fi.Mode() != 0o755 {
					t.Fatalf("mode %v", fi.Mode())
				}
			}
			h.check(t)
		})
	}
}
