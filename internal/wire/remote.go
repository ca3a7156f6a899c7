package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Remote is the part of env.Service a session's tools call (tool.Service),
// spoken to a daemon over its client: the other direction of Service. The
// Owner arguments are ignored: the daemon takes the owner from the client's
// token. A daemon's error envelope comes back as an error that errors.Is
// matches against env's and workspace's sentinels by its code (remoteError),
// so the tools classify it as they classify a local one.
type Remote struct{ c *client.Client }

// NewRemote speaks env's operations to the daemon c calls.
func NewRemote(c *client.Client) *Remote { return &Remote{c: c} }

func (r *Remote) Create(ctx context.Context, o env.CreateOptions) (env.Info, error) {
	var mounts []client.Mount
	for _, m := range o.Mounts {
		mounts = append(mounts, client.Mount{Source: m.Source, Target: m.Target, Mode: string(m.Mode)})
	}
	e, err := r.c.Create(ctx, client.CreateRequest{Workspace: o.Workspace, Preset: o.Preset, Template: o.Template,
		Limits:  client.Limits{MemoryBytes: o.Limits.Memory, Pids: o.Limits.Pids, CPUs: o.Limits.CPUs, WorkspaceBytes: o.Limits.WorkspaceSize},
		Network: wireNetwork(o.Network), TTLSeconds: o.TTL.Seconds(), IdleSeconds: o.Idle.Seconds(), IdlePauseSeconds: o.IdlePause.Seconds(),
		OnTimeout: o.OnTimeout, Labels: o.Labels, Task: o.Owner.Task, Mounts: mounts, Layer: o.Layer})
	if err != nil {
		return env.Info{}, remoteErr(err)
	}
	return env.Info{ID: e.ID, Owner: env.Owner{Tenant: e.Owner.Tenant, Task: e.Owner.Task}, Labels: e.Labels,
		Template: e.Template, CreatedAt: e.CreatedAt, LastUsed: e.LastUsed, State: e.State}, nil
}

func (r *Remote) Destroy(ctx context.Context, _ env.Owner, id string) error {
	return remoteErr(r.c.Destroy(ctx, id))
}

func (r *Remote) Exec(ctx context.Context, _ env.Owner, id string, x env.ExecRequest) (*runner.Result, error) {
	req, err := clientExec(x)
	if err != nil {
		return nil, err
	}
	res, err := r.c.Exec(ctx, id, req)
	if err != nil {
		return nil, remoteErr(err)
	}
	return decodeResult(res)
}

func clientExec(x env.ExecRequest) (client.ExecRequest, error) {
	if x.TTY != nil {
		return client.ExecRequest{}, fmt.Errorf("%w: a remote exec has no terminal", env.ErrInvalid)
	}
	return client.ExecRequest{Argv: x.Argv, Env: x.Env, Cwd: x.Cwd, Stdin: string(x.Stdin),
		TimeoutSeconds: x.Timeout.Seconds(), OutputLimit: x.OutputLimit, OutputTotal: x.OutputTotal}, nil
}

func (r *Remote) Start(ctx context.Context, _ env.Owner, id string, x env.ExecRequest) (string, error) {
	req, err := clientExec(x)
	if err != nil {
		return "", err
	}
	p, err := r.c.Start(ctx, id, req)
	return p, remoteErr(err)
}

func (r *Remote) Wait(ctx context.Context, _ env.Owner, id, procID string) (*runner.Result, error) {
	res, err := r.c.Wait(ctx, id, procID)
	if err != nil {
		return nil, remoteErr(err)
	}
	return decodeResult(res)
}

func (r *Remote) Signal(ctx context.Context, _ env.Owner, id, procID, sig string) error {
	return remoteErr(r.c.Signal(ctx, id, procID, sig))
}

// decodeResult is result's inverse: client.Result is runner.Result's JSON,
// so decoding it back is the one conversion that cannot drift from the other.
func decodeResult(res *client.Result) (*runner.Result, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	out := &runner.Result{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("wire: the daemon's exec result: %w", err)
	}
	return out, nil
}

func (r *Remote) ReadFile(ctx context.Context, _ env.Owner, id, path string, offset, length int64) ([]byte, error) {
	b, err := r.c.ReadFile(ctx, id, path, offset, length)
	return b, remoteErr(err)
}

func (r *Remote) WriteFile(ctx context.Context, _ env.Owner, id, path string, data []byte) error {
	return remoteErr(r.c.WriteFile(ctx, id, path, data))
}

func (r *Remote) ListDir(ctx context.Context, _ env.Owner, id, path string) ([]workspace.Entry, error) {
	es, err := r.c.ListDir(ctx, id, path)
	if err != nil {
		return nil, remoteErr(err)
	}
	out := make([]workspace.Entry, 0, len(es))
	for _, e := range es {
		out = append(out, entry(e))
	}
	return out, nil
}

func (r *Remote) Stat(ctx context.Context, _ env.Owner, id, path string) (workspace.Entry, error) {
	e, err := r.c.Stat(ctx, id, path)
	if err != nil {
		return workspace.Entry{}, remoteErr(err)
	}
	return entry(e), nil
}

func (r *Remote) Mkdir(ctx context.Context, _ env.Owner, id, path string) error {
	return remoteErr(r.c.Mkdir(ctx, id, path))
}

func (r *Remote) Remove(ctx context.Context, _ env.Owner, id, path string) error {
	return remoteErr(r.c.Remove(ctx, id, path))
}

func (r *Remote) NetworkLog(ctx context.Context, _ env.Owner, id string, after uint64) ([]egress.Event, error) {
	evs, err := r.c.NetworkLog(ctx, id, after)
	if err != nil {
		return nil, remoteErr(err)
	}
	b, err := json.Marshal(evs) // client.NetworkEvent is egress.Event's JSON (networkEvent)
	if err != nil {
		return nil, err
	}
	var out []egress.Event
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("wire: the daemon's network log: %w", err)
	}
	return out, nil
}

func (r *Remote) SetNetwork(ctx context.Context, _ env.Owner, id string, n env.Network) error {
	if len(n.Secrets) > 0 || n.Scan.On {
		// Secret values and scanned values would travel through the API.
		return fmt.Errorf("%w: a remote environment's network cannot take secrets or an egress scan", env.ErrInvalid)
	}
	return remoteErr(r.c.SetNetwork(ctx, id, *wireNetwork(&n)))
}

func (r *Remote) ApplyPatch(ctx context.Context, _ env.Owner, id string, patch []byte) (workspace.PatchReport, error) {
	rep, err := r.c.ApplyPatch(ctx, id, patch)
	if err != nil {
		return workspace.PatchReport{}, remoteErr(err)
	}
	out := workspace.PatchReport{}
	for _, f := range rep.Files {
		out.Files = append(out.Files, workspace.PatchedFile{Op: workspace.PatchOp(f.Op), Path: f.Path, OldPath: f.OldPath,
			Added: f.Added, Deleted: f.Deleted})
	}
	return out, nil
}

func (r *Remote) StrReplace(ctx context.Context, _ env.Owner, id, path, old, new string) error {
	return remoteErr(r.c.StrReplace(ctx, id, path, old, new))
}

func (r *Remote) Diff(ctx context.Context, _ env.Owner, id string) ([]byte, error) {
	b, err := r.c.Diff(ctx, id)
	return b, remoteErr(err)
}

func (r *Remote) Export(ctx context.Context, _ env.Owner, id, path string) (env.Artifact, error) {
	a, err := r.c.Export(ctx, id, path)
	if err != nil {
		return env.Artifact{}, remoteErr(err)
	}
	return envArtifact(a), nil
}

func (r *Remote) ReadArtifact(ctx context.Context, _ env.Owner, ref string, offset, length int64) ([]byte, env.Artifact, error) {
	b, a, err := r.c.ReadArtifact(ctx, ref, offset, length)
	if err != nil {
		return nil, env.Artifact{}, remoteErr(err)
	}
	return b, envArtifact(a), nil
}

func envArtifact(a client.Artifact) env.Artifact {
	return env.Artifact{Ref: a.Ref, Size: a.Size, Owner: env.Owner{Tenant: a.Owner.Tenant, Task: a.Owner.Task},
		Name: a.Name, EnvID: a.EnvID, Source: a.Source}
}

// entry is fileEntry's inverse.
func entry(e client.FileEntry) workspace.Entry {
	m := fs.FileMode(e.Mode) & fs.ModePerm
	switch e.Type {
	case client.TypeDir:
		m |= fs.ModeDir
	case client.TypeSymlink:
		m |= fs.ModeSymlink
	case client.TypeOther:
		m |= fs.ModeIrregular
	}
	return workspace.Entry{Path: e.Path, Name: e.Name, Mode: m, Size: e.Size, ModTime: e.ModTime, Links: e.Links, LinkTarget: e.LinkTarget}
}

// remoteError is a daemon's error envelope, matched by errors.Is against the
// sentinel its code stands for (Map's rules, read backwards).
type remoteError struct{ ce *client.Error }

func (e *remoteError) Error() string { return e.ce.Error() }
func (e *remoteError) Unwrap() error { return e.ce }

func (e *remoteError) Is(target error) bool {
	s, ok := codeSentinel[e.ce.Code]
	return ok && s == target
}

var codeSentinel = map[string]error{
	client.CodeInvalid:    env.ErrInvalid,
	client.CodePermission: fs.ErrPermission,
	client.CodeNotFound:   fs.ErrNotExist,
	client.CodeExist:      fs.ErrExist,
	client.CodeBusy:       env.ErrBusy,
	client.CodeConflict:   workspace.ErrNoMatch,
	client.CodePaused:     env.ErrPaused,
	client.CodeTooLarge:   workspace.ErrLimit,
	client.CodeQuota:      env.ErrQuota,
	client.CodeNoSpace:    syscall.ENOSPC,
}

func remoteErr(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		return &remoteError{ce}
	}
	return err
}
