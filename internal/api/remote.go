package api

import (
	"context"
	"io"

	"github.com/agentbox/agentbox/internal/wire"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Remote is an env.Service that calls a daemon through c. The Owner arguments are
// ignored: the daemon derives the owner from c's token. Errors are the daemon's
// *client.Error envelopes, which Map passes through unchanged. `agentbox mcp` serves
// its tools from a Remote.
type Remote struct{ c *client.Client }

var _ env.Service = Remote{}

// NewRemote returns the env.Service of the daemon c talks to.
func NewRemote(c *client.Client) Remote { return Remote{c: c} }

func (r Remote) Create(ctx context.Context, o env.CreateOptions) (env.Info, error) {
	e, err := r.c.Create(ctx, wire.CreateRequest(o))
	return wire.Info(e), err
}

func (r Remote) Get(ctx context.Context, _ env.Owner, id string) (env.Info, error) {
	e, err := r.c.Get(ctx, id)
	return wire.Info(e), err
}

func (r Remote) List(ctx context.Context, _ env.Owner, labels map[string]string) ([]env.Info, error) {
	es, err := r.c.List(ctx, labels)
	if err != nil {
		return nil, err
	}
	out := make([]env.Info, 0, len(es))
	for _, e := range es {
		out = append(out, wire.Info(e))
	}
	return out, nil
}

func (r Remote) Destroy(ctx context.Context, _ env.Owner, id string) error {
	return r.c.Destroy(ctx, id)
}

func (r Remote) Exec(ctx context.Context, _ env.Owner, id string, req env.ExecRequest) (*runner.Result, error) {
	res, err := r.c.Exec(ctx, id, wire.WireExecRequest(req))
	return wire.RunnerResult(res), err
}

func (r Remote) Start(ctx context.Context, _ env.Owner, id string, req env.ExecRequest) (string, error) {
	return r.c.Start(ctx, id, wire.WireExecRequest(req))
}

func (r Remote) Wait(ctx context.Context, _ env.Owner, id, procID string) (*runner.Result, error) {
	res, err := r.c.Wait(ctx, id, procID)
	return wire.RunnerResult(res), err
}

// Events relays the daemon's stream (resumed across broken connections by the
// client) until the exit event, an error or ctx's end.
func (r Remote) Events(ctx context.Context, _ env.Owner, id, procID string, after int64) (<-chan env.Event, error) {
	st := r.c.Events(ctx, id, procID, after)
	if err := st.Open(); err != nil {
		return nil, err
	}
	ch := make(chan env.Event, 64)
	go func() {
		defer close(ch)
		defer st.Close()
		for {
			ev, err := st.Next()
			if err != nil {
				return
			}
			select {
			case ch <- env.Event{Seq: ev.Seq, Kind: ev.Kind, Data: ev.Data, Result: wire.RunnerResult(ev.Result)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

func (r Remote) WriteStdin(ctx context.Context, _ env.Owner, id, procID string, data []byte, eof bool) error {
	return r.c.WriteStdin(ctx, id, procID, data, eof)
}

func (r Remote) Signal(ctx context.Context, _ env.Owner, id, procID string, sig string) error {
	return r.c.Signal(ctx, id, procID, sig)
}

func (r Remote) ReadFile(ctx context.Context, _ env.Owner, id, path string, offset, length int64) ([]byte, error) {
	return r.c.ReadFile(ctx, id, path, offset, length)
}

func (r Remote) WriteFile(ctx context.Context, _ env.Owner, id, path string, data []byte) error {
	return r.c.WriteFile(ctx, id, path, data)
}

func (r Remote) ListDir(ctx context.Context, _ env.Owner, id, path string) ([]workspace.Entry, error) {
	es, err := r.c.ListDir(ctx, id, path)
	if err != nil {
		return nil, err
	}
	out := make([]workspace.Entry, 0, len(es))
	for _, e := range es {
		out = append(out, wire.Entry(e))
	}
	return out, nil
}

func (r Remote) Stat(ctx context.Context, _ env.Owner, id, path string) (workspace.Entry, error) {
	e, err := r.c.Stat(ctx, id, path)
	return wire.Entry(e), err
}

func (r Remote) Remove(ctx context.Context, _ env.Owner, id, path string) error {
	return r.c.Remove(ctx, id, path)
}

func (r Remote) Mkdir(ctx context.Context, _ env.Owner, id, path string) error {
	return r.c.Mkdir(ctx, id, path)
}

func (r Remote) Download(ctx context.Context, _ env.Owner, id, path string, w io.Writer) error {
	return r.c.Download(ctx, id, path, w)
}

func (r Remote) Upload(ctx context.Context, _ env.Owner, id, path string, rd io.Reader) error {
	return r.c.Upload(ctx, id, path, rd)
}

func (r Remote) ApplyPatch(ctx context.Context, _ env.Owner, id string, patch []byte) (workspace.PatchReport, error) {
	rep, err := r.c.ApplyPatch(ctx, id, patch)
	return wire.WorkspacePatchReport(rep), err
}

func (r Remote) StrReplace(ctx context.Context, _ env.Owner, id, path, old, new string) error {
	return r.c.StrReplace(ctx, id, path, old, new)
}

func (r Remote) Diff(ctx context.Context, _ env.Owner, id string) ([]byte, error) {
	return r.c.Diff(ctx, id)
}

func (r Remote) Export(ctx context.Context, _ env.Owner, id, path string) (env.Artifact, error) {
	a, err := r.c.Export(ctx, id, path)
	return wire.EnvArtifact(a), err
}

func (r Remote) ReadArtifact(ctx context.Context, _ env.Owner, ref string, offset, length int64) ([]byte, env.Artifact, error) {
	b, a, err := r.c.ReadArtifact(ctx, ref, offset, length)
	return b, wire.EnvArtifact(a), err
}
