package workspace

import (
	"path/filepath"
	"testing"
)

func benchRoot(b *testing.B) *Root {
	dir := b.TempDir()
	writeTree(b, dir, map[string]string{"victim": benign, "d/canary": benign, "sub/a/b/c/file": benign})
	r, err := OpenRoot(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

func BenchmarkReadFile(b *testing.B) {
	r := benchRoot(b)
	for b.Loop() {
		if _, err := r.ReadFile("victim", 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFileDeep(b *testing.B) {
	r := benchRoot(b)
	for b.Loop() {
		if _, err := r.ReadFile("sub/a/b/c/file", 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteFile(b *testing.B) {
	r := benchRoot(b)
	for b.Loop() {
		if err := r.WriteFile("victim", []byte(benign), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyPatch(b *testing.B) {
	r := benchRoot(b)
	patch := []byte("--- a/victim\n+++ b/victim\n@@ -1 +1 @@\n-" + benign + "+" + benign)
	for b.Loop() {
		if _, err := r.ApplyPatch(patch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiffTrees diffs two copies of a 1,000-file tree that differ in 10 files.
func BenchmarkDiffTrees(b *testing.B) {
	base := b.TempDir()
	files := map[string]string{}
	for i := range 1000 {
		files[filepath.Join("d"+string(rune('a'+i%20)), "f"+string(rune('a'+i/20%26))+string(rune('a'+i%7)))] = benign
	}
	a, c := filepath.Join(base, "a"), filepath.Join(base, "b")
	writeTree(b, a, files)
	copyTree(b, a, c)
	for i := range 10 {
		writeTree(b, c, map[string]string{"new" + string(rune('a'+i)): "new\n"})
	}
	for b.Loop() {
		if _, _, err := DiffTrees(a, c, DiffOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
