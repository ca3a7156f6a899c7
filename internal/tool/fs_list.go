package tool

import (
	"context"
	"encoding/json"
	"io/fs"
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/workspace"
)

type listArgs struct {
	Path  string `json:"path,omitempty" jsonschema:"directory relative to the workspace root (default: the root)"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels to descend, 1 to 5 (default 1: the directory's own entries)"`
}

type listEntry struct {
	Path string `json:"path"`
	Type string `json:"type" jsonschema:"file, dir, symlink or other"`
	Size int64  `json:"size,omitempty"`
}

type listOut struct {
	Path      string      `json:"path"`
	Entries   []listEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

// maxListEntries caps what one fs.list returns.
const maxListEntries = 1000

func (w *Workspace) fsList() Spec {
	return Spec{
		Describe:    w.resolving(describeList),
		Name:        "fs.list",
		Description: "List a directory of the workspace, optionally a few levels deep (.git is not descended into). Symlinks are listed, not followed.",
		InputSchema: SchemaFor[listArgs](), OutputSchema: SchemaFor[listOut](),
		Effect: EffectRead, Idempotent: true, Scope: ScopeRead,
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a listArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			if a.Depth < 0 || a.Depth > 5 {
				return Errorf(EINVAL, false, ActFixArgs, "depth must be between 1 and 5")
			}
			return nil
		},
		Handler: w.list,
	}
}

func (w *Workspace) list(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a listArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	root, err := workspace.CleanPath(a.Path)
	if err != nil {
		return Result{}, err
	}
	depth := max(a.Depth, 1)
	out := listOut{Path: root, Entries: []listEntry{}}
	err = w.walk(ctx, root, depth, func(e workspace.Entry) bool {
		if len(out.Entries) >= maxListEntries {
			out.Truncated = true
			return false
		}
		out.Entries = append(out.Entries, listEntry{Path: e.Path, Type: entryType(e.Mode), Size: sizeOf(e)})
		return true
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Data: out, Source: root, Truncated: out.Truncated}, nil
}

// walk visits the entries under dir breadth-first down to depth levels, never
// descending into symlinks or .git, until visit returns false.
func (w *Workspace) walk(ctx context.Context, dir string, depth int, visit func(workspace.Entry) bool) error {
	level := []string{dir}
	for d := 0; d < depth && len(level) > 0; d++ {
		var next []string
		for _, p := range level {
			ents, err := w.o.Service.ListDir(ctx, w.o.Owner, w.o.EnvID, p)
			if err != nil {
				if d > 0 { // a subdirectory that vanished or cannot be read is skipped
					continue
				}
				return err
			}
			for _, e := range ents {
				if !visit(e) {
					return nil
				}
				if e.Mode.IsDir() && !strings.EqualFold(path.Base(e.Path), ".git") {
					next = append(next, e.Path)
				}
			}
		}
		level = next
	}
	return nil
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

func sizeOf(e workspace.Entry) int64 {
	if e.Mode.IsRegular() {
		return e.Size
	}
	return 0
}
