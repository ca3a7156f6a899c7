package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpen: each kind of suite spec loads what it names, and a spec that names
// nothing loadable says what would.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	all, err := Open(t.Context(), "builtin", dir, ImportOptions{})
	if err != nil || len(all) < 7 {
		t.Fatalf("builtin: %d tasks, %v", len(all), err)
	}
	one, err := Open(t.Context(), all[0].Dir, t.TempDir(), ImportOptions{})
	if err != nil || len(one) != 1 || one[0].ID != all[0].ID {
		t.Fatalf("a task directory: %v %v", one, err)
	}
	suite, err := Open(t.Context(), filepath.Join(dir, "builtin"), t.TempDir(), ImportOptions{})
	if err != nil || len(suite) != len(all) {
		t.Fatalf("a directory of tasks: %d tasks, %v", len(suite), err)
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("x"), 0o644)
	for spec, want := range map[string]string{
		filepath.Join(dir, "missing"): "give builtin, a task directory",
		notes:                         "SWE-bench JSONL",
	} {
		if _, err := Open(t.Context(), spec, t.TempDir(), ImportOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}
