package mcp

import (
	"context"
	"io"

	"github.com/agentbox/agentbox/client"
)

// Service is what the tools call: every environment operation, in the API's wire
// types. In the daemon it is the server's *wire.Service, over the access.Guard
// (the caller comes from each request's token); for `agentbox mcp` on stdio it is
// Remote, the daemon's client.
type Service interface {
	Create(ctx context.Context, r client.CreateRequest) (client.Environment, error)
	Get(ctx context.Context, id string) (client.Environment, error)
	List(ctx context.Context, labels map[string]string) ([]client.Environment, error)
	Pause(ctx context.Context, id string, r client.PauseRequest) (client.Environment, error)
	Resume(ctx context.Context, id string) (client.Environment, error)
	Snapshot(ctx context.Context, id string) (client.Snapshot, error)
	Fork(ctx context.Context, id string, r client.ForkRequest) ([]client.Environment, error)
	Destroy(ctx context.Context, id string) error

	Exec(ctx context.Context, id string, r client.ExecRequest) (*client.Result, error)
	Start(ctx context.Context, id string, r client.ExecRequest) (string, error)
	Wait(ctx context.Context, id, procID string) (*client.Result, error)
	Events(ctx context.Context, id, procID string, after int64) (<-chan client.Event, error)
	WriteStdin(ctx context.Context, id, procID string, data []byte, eof bool) error
	Signal(ctx context.Context, id, procID, sig string) error

	ReadFile(ctx context.Context, id, path string, offset, length int64) ([]byte, error)
	WriteFile(ctx context.Context, id, path string, data []byte) error
	ListDir(ctx context.Context, id, path string) ([]client.FileEntry, error)
	Stat(ctx context.Context, id, path string) (client.FileEntry, error)
	Remove(ctx context.Context, id, path string) error
	Mkdir(ctx context.Context, id, path string) error
	Download(ctx context.Context, id, path string, w io.Writer) error
	Upload(ctx context.Context, id, path string, r io.Reader) error

	ApplyPatch(ctx context.Context, id string, patch []byte) (client.PatchReport, error)
	StrReplace(ctx context.Context, id, path, old, new string) error
	Diff(ctx context.Context, id string) ([]byte, error)

	SetNetwork(ctx context.Context, id string, n client.Network) error
	NetworkLog(ctx context.Context, id string, after uint64) ([]client.NetworkEvent, error)

	Export(ctx context.Context, id, path string) (client.Artifact, error)
	ReadArtifact(ctx context.Context, ref string, offset, length int64) ([]byte, client.Artifact, error)
}

// Remote is the Service of the daemon c talks to: c's own methods, and its event
// stream (resumed across broken connections) relayed as a channel. Errors are the
// daemon's envelopes, which wire.Map passes through unchanged.
func Remote(c *client.Client) Service { return remote{c} }

type remote struct{ *client.Client }

// Events relays the daemon's stream until the exit event, an error or ctx's end.
func (r remote) Events(ctx context.Context, id, procID string, after int64) (<-chan client.Event, error) {
	st := r.Client.Events(ctx, id, procID, after)
	if err := st.Open(); err != nil {
		return nil, err
	}
	ch := make(chan client.Event, 64)
	go func() {
		defer close(ch)
		defer st.Close()
		for {
			ev, err := st.Next()
			if err != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
