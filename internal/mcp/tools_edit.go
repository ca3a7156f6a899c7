package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
)

type patchIn struct {
	envID
	client.PatchRequest
}

type strReplaceIn struct {
	envID
	client.StrReplaceRequest
}

type diffOut struct {
	Diff  string `json:"diff" jsonschema:"every change since the environment was created, as a unified diff"`
	Bytes int    `json:"bytes"`
}

type exportIn struct {
	envID
	client.ExportRequest
}

type artifactIn struct {
	Ref    string `json:"ref" jsonschema:"artifact reference, sha256:<hex>"`
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length,omitempty" jsonschema:"bytes to read (0: to the end, within the server's cap)"`
}

type artifactOut struct {
	Artifact client.Artifact `json:"artifact"`
	readOut
}

func (t *tools) addEdit(s *mcp.Server) {
	svc := t.d.Service
	add(t, s, &mcp.Tool{Name: "patch_apply", Description: "Apply a unified diff to the workspace, all hunks or none; a hunk that does not apply is an ECONFLICT error naming the file, the hunk and the line.",
		Annotations: hints("Apply patch", false, true, false)},
		func(in patchIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in patchIn) (client.PatchReport, error) {
			return svc.ApplyPatch(ctx, in.ID, []byte(in.Patch))
		})
	add(t, s, &mcp.Tool{Name: "str_replace", Description: "Replace the one occurrence of old by new in a workspace file; zero or several occurrences are an ECONFLICT error saying how many.",
		Annotations: hints("Replace string", false, true, false)},
		func(in strReplaceIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in strReplaceIn) (okOut, error) {
			err := svc.StrReplace(ctx, in.ID, in.Path, in.Old, in.New)
			return okOut{OK: err == nil}, err
		})
	add(t, s, &mcp.Tool{Name: "diff", Description: "Every change made in the environment's workspace since its creation, as a unified diff (added, deleted and binary files marked).",
		Annotations: hints("Workspace diff", true, false, true)},
		func(in envID) string { return envWhat(in.ID) },
		func(ctx context.Context, in envID) (diffOut, error) {
			d, err := svc.Diff(ctx, in.ID)
			return diffOut{Diff: string(d), Bytes: len(d)}, err
		})
	add(t, s, &mcp.Tool{Name: "artifact_export", Description: "Store a workspace file as an artifact that outlives the environment and only your tenant can read; returns its sha256 reference.",
		Annotations: hints("Export artifact", false, false, true)},
		func(in exportIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in exportIn) (client.Artifact, error) {
			return svc.Export(ctx, in.ID, in.Path)
		})
	add(t, s, &mcp.Tool{Name: "artifact_read", Description: "Read an artifact (or a range of it) by reference.",
		Annotations: hints("Read artifact", true, false, true)},
		func(in artifactIn) string { return fmt.Sprintf("artifact %q", in.Ref) },
		func(ctx context.Context, in artifactIn) (artifactOut, error) {
			b, a, err := svc.ReadArtifact(ctx, in.Ref, in.Offset, in.Length)
			if err != nil {
				return artifactOut{}, err
			}
			out := artifactOut{Artifact: a}
			out.readOut = encode(b)
			return out, nil
		})
}
