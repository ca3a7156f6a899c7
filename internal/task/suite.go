package task

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed builtin/*.txtar builtin/agentbox_judge.py
var builtinFS embed.FS

// judgeName is the out-of-process judge every built-in task runs, kept once in
// builtin/ and written into each task's hidden/.
const judgeName = "agentbox_judge.py"

// ExtractBuiltin writes the built-in suite into dir, one task directory per task
// (named after the archive), each with the judge in its hidden/. dir is created if
// missing and must otherwise be empty. Files get mode 0644 and directories 0755:
// the archives keep no modes, so a built-in task cannot rely on an executable bit.
func ExtractBuiltin(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("extract built-in tasks: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("extract built-in tasks: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("extract built-in tasks: %s is not empty", dir)
	}
	ids, err := BuiltinIDs()
	if err != nil {
		return fmt.Errorf("extract built-in tasks: %w", err)
	}
	for _, id := range ids {
		if err := writeBuiltin(id, filepath.Join(dir, id), ""); err != nil {
			return fmt.Errorf("extract built-in task %s: %w", id, err)
		}
	}
	return nil
}

// writeBuiltin writes the files of the built-in task id whose names start with
// prefix ("" for all, "repo/" for the repository alone) into dir, without the
// prefix. The judge goes into hidden/.
func writeBuiltin(id, dir, prefix string) error {
	data, err := builtinFS.ReadFile(path.Join("builtin", id+".txtar"))
	if err != nil {
		return err
	}
	judge, err := builtinFS.ReadFile(path.Join("builtin", judgeName))
	if err != nil {
		return err
	}
	files, err := parseTxtar(data)
	if err != nil {
		return err
	}
	files = append(files, archiveFile{Name: "hidden/" + judgeName, Data: judge})
	for _, f := range files {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			continue
		}
		if err := writeNew(filepath.Join(dir, filepath.FromSlash(name)), f.Data); err != nil {
			return err
		}
	}
	return nil
}

func writeNew(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// Builtin extracts the built-in suite into dir (see ExtractBuiltin) and loads it.
// The caller owns dir and removes it when done; the grader copies from it.
func Builtin(dir string) ([]*Task, error) {
	if err := ExtractBuiltin(dir); err != nil {
		return nil, err
	}
	return LoadSuite(dir)
}

// LoadSuite loads every subdirectory of dir that holds a task.yaml, sorted by id.
// Ids must be unique within the suite.
func LoadSuite(dir string) ([]*Task, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load suite: %w", err)
	}
	var tasks []*Task
	byID := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(filepath.Join(sub, FileName)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		t, err := Load(sub)
		if err != nil {
			return nil, err
		}
		if prev, dup := byID[t.ID]; dup {
			return nil, &Error{File: filepath.Join(sub, FileName), Field: "id", Err: fmt.Errorf("%q is also the id of %s; ids must be unique in a suite", t.ID, prev)}
		}
		byID[t.ID] = sub
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("load suite: no task directories (with a %s) in %s", FileName, dir)
	}
	slices.SortFunc(tasks, func(a, b *Task) int { return strings.Compare(a.ID, b.ID) })
	return tasks, nil
}

// ReadReference returns the reference patch.
func (t *Task) ReadReference() ([]byte, error) {
	f, err := os.Open(t.Reference)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxPatch))
}

// Open loads the tasks spec names: "builtin" (extracted under dir), a task
// directory, a directory of task directories, or a SWE-bench JSONL file
// (*.jsonl, imported under dir by ImportSWEBench with imp: the local clones in
// imp.Repos, run as imp.Specs and imp.Override say; imp.OutDir is set). The
// caller owns dir and removes it when done.
func Open(ctx context.Context, spec, dir string, imp ImportOptions) ([]*Task, error) {
	if spec == "builtin" {
		return Builtin(filepath.Join(dir, "builtin"))
	}
	fi, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("%w (give builtin, a task directory, a directory of tasks, or a SWE-bench .jsonl file)", err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(spec, FileName)); err == nil {
			t, err := Load(spec)
			if err != nil {
				return nil, err
			}
			return []*Task{t}, nil
		}
		return LoadSuite(spec)
	}
	if !strings.HasSuffix(spec, ".jsonl") {
		return nil, errors.New("a file must be SWE-bench JSONL (*.jsonl)")
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	imp.OutDir = filepath.Join(dir, "swebench")
	if _, err := ImportSWEBench(ctx, f, imp); err != nil {
		return nil, err
	}
	return LoadSuite(imp.OutDir)
}
