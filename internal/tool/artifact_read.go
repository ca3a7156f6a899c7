package tool

import (
	"context"
	"encoding/json"
)

type artifactArgs struct {
	Ref    string `json:"ref" jsonschema:"an artifact reference from a result's refs (sha256:...)"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset"`
	Length int64  `json:"length,omitempty" jsonschema:"bytes to read (default and maximum: the output cap)"`
}

type artifactOut struct {
	Ref        string `json:"ref"`
	Size       int64  `json:"size"`
	Offset     int64  `json:"offset"`
	Bytes      int    `json:"bytes"`
	NextOffset int64  `json:"next_offset,omitempty"`
	Binary     bool   `json:"binary,omitempty"`
	Truncated  bool   `json:"truncated"`
}

func (w *Workspace) artifactRead() Spec {
	return Spec{
		Name:        "artifact.read",
		Description: "Read a range of an artifact: the whole output behind a truncated result (its refs), page by page with next_offset.",
		InputSchema: SchemaFor[artifactArgs](), OutputSchema: SchemaFor[artifactOut](),
		Effect: EffectRead, Idempotent: true, Scope: ScopeRead,
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a artifactArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			if a.Offset < 0 || a.Length < 0 {
				return Errorf(EINVAL, false, ActFixArgs, "offset and length must not be negative")
			}
			return nil
		},
		Handler: w.readArtifact,
	}
}

func (w *Workspace) readArtifact(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a artifactArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	max := int64(w.o.MaxOutput)
	n := a.Length
	if n == 0 || n > max {
		n = max
	}
	b, ref, ok := w.o.Artifacts.Read(a.Ref, a.Offset, n+1)
	size := ref.Size
	if !ok {
		data, art, err := w.o.Service.ReadArtifact(ctx, w.o.Owner, a.Ref, a.Offset, n+1)
		if err != nil {
			return Result{}, err
		}
		b, size = data, art.Size
	}
	out := artifactOut{Ref: a.Ref, Size: size, Offset: a.Offset}
	if int64(len(b)) > n {
		b = b[:runeStart(string(b), int(n))]
		out.Truncated, out.NextOffset = true, a.Offset+int64(len(b))
	}
	out.Bytes = len(b)
	res := Result{Source: "artifact " + a.Ref, Truncated: out.Truncated}
	if isBinary(b) {
		out.Binary = true
	} else {
		res.Text = string(b)
	}
	res.Data = out
	return res, nil
}
