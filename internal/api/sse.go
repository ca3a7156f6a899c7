package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

// heartbeat is how often an idle event stream sends a comment, so that proxies and
// clients can tell a quiet command from a dead connection.
const heartbeat = 15 * time.Second

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
// goes, after which the client reconnects. Idle streams get a heartbeat comment.
func streamSSE[T any](s *Server, w http.ResponseWriter, r *http.Request, ended *wire.Error,
	open func(ctx context.Context, after int64) (<-chan T, error), frame func(T) sseFrame) {
	after, err := intQuery(r, "after")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, wire.BadRequest("Last-Event-ID must be an event sequence number, got %q", v))
			return
		}
		after = max(after, n)
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
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 32<<10)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	fmt.Fprint(bw, "retry: 1000\n\n")
	if flush() != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				if ctx.Err() == nil {
					// The service ended the stream without a last event.
					_, e := wire.Map(ended, describe(r), s.red)
					writeSSE(bw, "error", "", client.Envelope{Error: &e})
					flush()
				}
				return
			}
			f := frame(ev)
			writeSSE(bw, f.kind, f.id, ev)
			// Flush once nothing more is queued, so bursts share a write.
			if len(ch) == 0 || f.last {
				if flush() != nil {
					return
				}
			}
			if f.last {
				return
			}
		case <-tick.C:
			fmt.Fprint(bw, ": ping\n\n")
			if flush() != nil {
				return
			}
		case <-ctx.Done():
			flush()
			return
		}
	}
}

var errStreamEnded = &wire.Error{Status: http.StatusNotFound, Body: client.Error{Code: client.CodeNotFound,
	Message:         "the event stream ended before the command's exit: the environment was destroyed",
	SuggestedAction: "create a new environment"}}

// writeSSE writes one event. JSON never holds a raw newline, so data is one line.
func writeSSE(w *bufio.Writer, kind, id string, v any) {
	b, _ := json.Marshal(v)
	if id != "" {
		fmt.Fprintf(w, "id: %s\n", id)
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
}
