package task

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// BuiltinIDs lists the built-in tasks, sorted.
func BuiltinIDs() ([]string, error) {
	names, err := builtinFS.ReadDir("builtin")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range names {
		if id, ok := strings.CutSuffix(e.Name(), ".txtar"); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// ExportBuiltin writes the built-in task id into dir, which is created if missing
// and must otherwise be empty. By default it writes the task's repository, what an
// agent starts from (`agentbox agent --workspace DIR`), and none of the hidden
// tests; whole writes the task directory (task.yaml, repo/, hidden/ with the judge)
// that grade and eval load.
func ExportBuiltin(id, dir string, whole bool) error {
	ids, err := BuiltinIDs()
	if err != nil {
		return err
	}
	if !slices.Contains(ids, id) {
		return fmt.Errorf("no built-in task %q (built-in: %s)", id, strings.Join(ids, ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export task %s: %w", id, err)
	}
	if entries, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("export task %s: %w", id, err)
	} else if len(entries) > 0 {
		return fmt.Errorf("export task %s: %s is not empty: name a new or empty directory", id, dir)
	}
	prefix := "repo/"
	if whole {
		prefix = ""
	}
	if err := writeBuiltin(id, dir, prefix); err != nil {
		return fmt.Errorf("export task %s: %w", id, err)
	}
	return nil
}
