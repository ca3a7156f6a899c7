package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportBuiltin(t *testing.T) {
	ids, err := BuiltinIDs()
	if err != nil || len(ids) < 2 || ids[0] > ids[1] {
		t.Fatalf("BuiltinIDs = %q, %v", ids, err)
	}
	repo := filepath.Join(t.TempDir(), "calc")
	if err := ExportBuiltin("calc", repo, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "calc.py")); err != nil {
		t.Fatalf("repository not written: %v", err)
	}
	// The repository alone: an agent given it must not see the hidden tests.
	filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if n := d.Name(); n == "hidden" || n == "task.yaml" || n == "solution.patch" || strings.HasPrefix(n, "judge") || n == judgeName {
			t.Errorf("repository export holds %s", p)
		}
		return nil
	})
	whole := filepath.Join(t.TempDir(), "t")
	if err := ExportBuiltin("calc", whole, true); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(whole)
	if err != nil || tk.ID != "calc" {
		t.Fatalf("whole export does not load: %v", err)
	}
	if err := ExportBuiltin("calc", whole, true); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("export into a non-empty directory: %v", err)
	}
	if err := ExportBuiltin("nope", t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "calc") {
		t.Fatalf("unknown id: %v", err)
	}
}
