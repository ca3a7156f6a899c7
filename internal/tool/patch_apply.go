package tool

import (
	"context"
	"encoding/json"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/workspace"
)

type patchArgs struct {
	Path  string `json:"path,omitempty" jsonschema:"file to edit with old/new (str_replace mode)"`
	Old   string `json:"old,omitempty" jsonschema:"exact text to replace; it must occur exactly once in the file"`
	New   string `json:"new,omitempty" jsonschema:"replacement text"`
	Patch string `json:"patch,omitempty" jsonschema:"a unified diff (git style or plain) to apply instead of path/old/new; all hunks apply or none"`
}

type patchOut struct {
	Mode  string               `json:"mode" jsonschema:"str_replace or patch"`
	Files []client.PatchedFile `json:"files"`
}

func (w *Workspace) patchApply() Spec {
	return Spec{
		Describe: w.resolving(describePatch),
		Name:     "patch.apply",
		Description: "Edit files. Either replace text in one file (path, old, new: old must occur exactly once, " +
			"otherwise nothing changes and the error says 0 or N matches), or apply a unified diff (patch), all hunks or none.",
		InputSchema: SchemaFor[patchArgs](), OutputSchema: SchemaFor[patchOut](),
		Effect: EffectWrite, Scope: ScopeWrite,
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a patchArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			replace := a.Path != "" || a.Old != "" || a.New != ""
			switch {
			case replace && a.Patch != "":
				return Errorf(EINVAL, false, ActFixArgs, "give either path/old/new or patch, not both")
			case !replace && a.Patch == "":
				return Errorf(EINVAL, false, ActFixArgs, "give path, old and new, or a patch")
			case replace && (a.Path == "" || a.Old == ""):
				return Errorf(EINVAL, false, ActFixArgs, "str_replace needs path and a non-empty old")
			}
			return nil
		},
		Handler: w.patch,
	}
}

func (w *Workspace) patch(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a patchArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	svc, o := w.o.Service, w.o
	if a.Patch == "" {
		err := svc.StrReplace(ctx, o.Owner, o.EnvID, a.Path, a.Old, a.New)
		if err != nil {
			return Result{}, err
		}
		w.changed(ctx)
		return Result{Data: patchOut{Mode: "str_replace", Files: []client.PatchedFile{{Op: string(workspace.PatchModify), Path: a.Path}}}, Source: a.Path}, nil
	}
	rep, err := svc.ApplyPatch(ctx, o.Owner, o.EnvID, []byte(a.Patch))
	if err != nil {
		return Result{}, err
	}
	w.changed(ctx)
	out := patchOut{Mode: "patch", Files: []client.PatchedFile{}}
	for _, f := range rep.Files {
		out.Files = append(out.Files, client.PatchedFile{Op: string(f.Op), Path: f.Path, OldPath: f.OldPath, Added: f.Added, Deleted: f.Deleted})
	}
	return Result{Data: out, Source: "patch"}, nil
}
