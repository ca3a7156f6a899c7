package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
	"github.com/agentbox/agentbox/internal/wire/sse"
)

// events streams a background command's events as server-sent events. Each event's
// id is its sequence number; a client resumes by sending the last id it saw as
// Last-Event-ID (what EventSource does) or as ?after=, and receives only later
// events. The stream ends after the exit event, or with an "error" event carrying
// the envelope, or (at shutdown) by closing, after which the client reconnects.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	streamSSE(s, w, r, errStreamEnded,
		func(ctx context.Context, after int64) (<-chan client.Event, error) {
			return s.svc.Events(ctx, r.PathValue("id"), r.PathValue("proc"), after)
		},
		func(ev client.Event) sseFrame {
			return sseFrame{kind: ev.Kind, id: strconv.FormatInt(ev.Seq, 10), last: ev.Kind == client.EventExit}
		})
}

// sseFrame is how one event of a stream is sent: its kind and id, and whether the
// stream ends after it.
type sseFrame struct {
	kind, id string
	last     bool
}

// streamSSE serves an event stream: open gives the events after the point the
// client resumes from (?after= or Last-Event-ID, the later), frame names each. The
// stream ends after a last frame; with an "error" event carrying ended if the
// service closes the channel first; or by closing at shutdown or when the client
// goes, after which the client reconnects. Idle streams get a heartbeat comment (package sse).
func streamSSE[T any](s *Server, w http.ResponseWriter, r *http.Request, ended *wire.Error,
	open func(ctx context.Context, after int64) (<-chan T, error), frame func(T) sseFrame) {
	after, err := sse.After(r)
	if err != nil {
		s.writeError(w, r, wire.BadRequest("%s", err))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.drain:
			cancel()
		case <-ctx.Done():
		}
	}()
	ch, err := open(ctx, after)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st := sse.Open(w)
	if st.Flush() != nil {
		return
	}
	go st.KeepAlive(ctx, cancel)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				if ctx.Err() == nil {
					// The service ended the stream without a last event.
					_, e := wire.Map(ended, describe(r), s.red)
					st.Event("error", "", client.Envelope{Error: &e})
					st.Flush()
				}
				return
			}
			f := frame(ev)
			st.Event(f.kind, f.id, ev)
			// Flush once nothing more is queued, so bursts share a write.
			if len(ch) == 0 || f.last {
				if st.Flush() != nil {
					return
				}
			}
			if f.last {
				return
			}
		case <-ctx.Done():
			st.Flush()
			return
		}
	}
}

var errStreamEnded = &wire.Error{Status: http.StatusNotFound, Body: client.Error{Code: client.CodeNotFound,
	Message:         "the event stream ended before the command's exit: the environment was destroyed",
	SuggestedAction: "create a new environment"}}
