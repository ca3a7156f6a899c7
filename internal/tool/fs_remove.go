package tool

import (
	"context"
	"encoding/json"
)

type removeArgs struct {
	Path string `json:"path" jsonschema:"file, symlink or directory relative to the workspace root; a directory goes with everything in it"`
}

type removeOut struct {
	Path    string `json:"path"`
	Removed bool   `json:"removed"`
}

func (w *Workspace) fsRemove() Spec {
	return Spec{
		Name:        "fs.remove",
		Description: "Remove a file, a symlink (never its target) or a directory tree from the workspace. A path that does not exist is an ENOENT error.",
		InputSchema: SchemaFor[removeArgs](), OutputSchema: SchemaFor[removeOut](),
		Effect: EffectWrite, Idempotent: true, Scope: ScopeWrite,
		Describe: w.resolving(w.describeRemove), Handler: w.remove,
	}
}

func (w *Workspace) remove(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a removeArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	if err := w.o.Service.Remove(ctx, w.o.Owner, w.o.EnvID, a.Path); err != nil {
		return Result{}, err
	}
	w.changed(ctx)
	return Result{Data: removeOut{Path: a.Path, Removed: true}, Source: a.Path}, nil
}
