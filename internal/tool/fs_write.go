package tool

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
)

type writeArgs struct {
	Path    string `json:"path" jsonschema:"file path relative to the workspace root; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

type writeOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func (w *Workspace) fsWrite() Spec {
	return Spec{
		Describe:    w.resolving(describeWrite),
		Name:        "fs.write",
		Description: "Create or replace a whole file in the workspace (atomically). To change part of a file, prefer patch.apply.",
		InputSchema: SchemaFor[writeArgs](), OutputSchema: SchemaFor[writeOut](),
		Effect: EffectWrite, Idempotent: true, Scope: ScopeWrite,
		Handler: w.write,
	}
}

func (w *Workspace) write(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a writeArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	svc, o := w.o.Service, w.o
	err := svc.WriteFile(ctx, o.Owner, o.EnvID, a.Path, []byte(a.Content))
	if errors.Is(err, fs.ErrNotExist) {
		if merr := w.mkdirAll(ctx, path.Dir(a.Path)); merr == nil {
			err = svc.WriteFile(ctx, o.Owner, o.EnvID, a.Path, []byte(a.Content))
		}
	}
	if err != nil {
		return Result{}, err
	}
	w.changed(ctx)
	return Result{Data: writeOut{Path: a.Path, Bytes: len(a.Content)}, Source: a.Path}, nil
}

func (w *Workspace) mkdirAll(ctx context.Context, dir string) error {
	if dir == "." || dir == "/" || dir == "" {
		return nil
	}
	if _, err := w.o.Service.Stat(ctx, w.o.Owner, w.o.EnvID, dir); err == nil {
		return nil
	}
	if err := w.mkdirAll(ctx, path.Dir(dir)); err != nil {
		return err
	}
	err := w.o.Service.Mkdir(ctx, w.o.Owner, w.o.EnvID, dir)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
