package wire

import (
	"context"
	"io"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
)

// Service is an env.Service spoken in the wire types: what an HTTP handler or an
// MCP tool calls, with the same methods as the daemon's *client.Client (but
// Events, a channel here). It converts each request (checking what env's types
// cannot say: durations, negative limits, an empty argv) and each answer, and
// does nothing else.
//
// Every call passes the zero Owner: svc is an access.Guard, which takes the owner
// from the caller in ctx.
type Service struct{ svc env.Service }

// New speaks svc's operations in the wire types.
func New(svc env.Service) *Service { return &Service{svc: svc} }

// none is the Owner argument: the Guard replaces it by the caller's.
var none env.Owner

func (s *Service) Create(ctx context.Context, r client.CreateRequest) (client.Environment, error) {
	o, err := createOptions(r)
	if err != nil {
		return client.Environment{}, err
	}
	info, err := s.svc.Create(ctx, o)
	return environment(info), err
}

func (s *Service) Get(ctx context.Context, id string) (client.Environment, error) {
	info, err := s.svc.Get(ctx, none, id)
	return environment(info), err
}

func (s *Service) List(ctx context.Context, labels map[string]string) ([]client.Environment, error) {
	infos, err := s.svc.List(ctx, none, labels)
	out := []client.Environment{}
	for _, i := range infos {
		out = append(out, environment(i))
	}
	return out, err
}

func (s *Service) Pause(ctx context.Context, id string, r client.PauseRequest) (client.Environment, error) {
	info, err := s.svc.Pause(ctx, none, id, env.PauseOptions{ToDisk: r.ToDisk})
	return environment(info), err
}

func (s *Service) Resume(ctx context.Context, id string) (client.Environment, error) {
	info, err := s.svc.Resume(ctx, none, id)
	return environment(info), err
}

func (s *Service) Snapshot(ctx context.Context, id string) (client.Snapshot, error) {
	sn, err := s.svc.Snapshot(ctx, none, id)
	return client.Snapshot{ID: sn.ID, EnvID: sn.EnvID, Owner: owner(sn.Owner), CreatedAt: sn.CreatedAt, Depth: sn.Depth, Bytes: sn.Bytes}, err
}

func (s *Service) Fork(ctx context.Context, id string, r client.ForkRequest) ([]client.Environment, error) {
	infos, err := s.svc.Fork(ctx, none, id, env.ForkOptions{Count: r.Count, Snapshot: r.Snapshot})
	out := []client.Environment{}
	for _, i := range infos {
		out = append(out, environment(i))
	}
	return out, err
}

func (s *Service) Destroy(ctx context.Context, id string) error {
	return s.svc.Destroy(ctx, none, id)
}

func (s *Service) Exec(ctx context.Context, id string, r client.ExecRequest) (*client.Result, error) {
	er, err := execRequest(r)
	if err != nil {
		return nil, err
	}
	res, err := s.svc.Exec(ctx, none, id, er)
	return result(res), err
}

func (s *Service) Start(ctx context.Context, id string, r client.ExecRequest) (string, error) {
	er, err := execRequest(r)
	if err != nil {
		return "", err
	}
	return s.svc.Start(ctx, none, id, er)
}

func (s *Service) Wait(ctx context.Context, id, procID string) (*client.Result, error) {
	res, err := s.svc.Wait(ctx, none, id, procID)
	return result(res), err
}

// Events relays a background command's events after the sequence number after,
// until the exit event, the service's end of the stream, or ctx's end.
func (s *Service) Events(ctx context.Context, id, procID string, after int64) (<-chan client.Event, error) {
	ch, err := s.svc.Events(ctx, none, id, procID, after)
	if err != nil {
		return nil, err
	}
	out := make(chan client.Event, cap(ch))
	go func() {
		defer close(out)
		for ev := range ch {
			select {
			case out <- event(ev):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (s *Service) WriteStdin(ctx context.Context, id, procID string, data []byte, eof bool) error {
	return s.svc.WriteStdin(ctx, none, id, procID, data, eof)
}

func (s *Service) Signal(ctx context.Context, id, procID, sig string) error {
	return s.svc.Signal(ctx, none, id, procID, sig)
}

func (s *Service) Resize(ctx context.Context, id, procID string, r client.ResizeRequest) error {
	size, err := terminalSize(r.Rows, r.Cols)
	if err != nil {
		return err
	}
	return s.svc.Resize(ctx, none, id, procID, size)
}

func (s *Service) ReadFile(ctx context.Context, id, path string, offset, length int64) ([]byte, error) {
	return s.svc.ReadFile(ctx, none, id, path, offset, length)
}

func (s *Service) WriteFile(ctx context.Context, id, path string, data []byte) error {
	return s.svc.WriteFile(ctx, none, id, path, data)
}

func (s *Service) ListDir(ctx context.Context, id, path string) ([]client.FileEntry, error) {
	ents, err := s.svc.ListDir(ctx, none, id, path)
	out := []client.FileEntry{}
	for _, e := range ents {
		out = append(out, fileEntry(e))
	}
	return out, err
}

func (s *Service) Stat(ctx context.Context, id, path string) (client.FileEntry, error) {
	e, err := s.svc.Stat(ctx, none, id, path)
	return fileEntry(e), err
}

func (s *Service) Remove(ctx context.Context, id, path string) error {
	return s.svc.Remove(ctx, none, id, path)
}

func (s *Service) Mkdir(ctx context.Context, id, path string) error {
	return s.svc.Mkdir(ctx, none, id, path)
}

func (s *Service) Download(ctx context.Context, id, path string, w io.Writer) error {
	return s.svc.Download(ctx, none, id, path, w)
}

func (s *Service) Upload(ctx context.Context, id, path string, r io.Reader) error {
	return s.svc.Upload(ctx, none, id, path, r)
}

func (s *Service) ApplyPatch(ctx context.Context, id string, patch []byte) (client.PatchReport, error) {
	rep, err := s.svc.ApplyPatch(ctx, none, id, patch)
	return patchReport(rep), err
}

func (s *Service) StrReplace(ctx context.Context, id, path, old, new string) error {
	return s.svc.StrReplace(ctx, none, id, path, old, new)
}

func (s *Service) Diff(ctx context.Context, id string) ([]byte, error) {
	return s.svc.Diff(ctx, none, id)
}

func (s *Service) Export(ctx context.Context, id, path string) (client.Artifact, error) {
	a, err := s.svc.Export(ctx, none, id, path)
	return artifact(a), err
}

func (s *Service) ReadArtifact(ctx context.Context, ref string, offset, length int64) ([]byte, client.Artifact, error) {
	b, a, err := s.svc.ReadArtifact(ctx, none, ref, offset, length)
	return b, artifact(a), err
}
