package sessionapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/trace"
)

// heartbeat is how often an idle stream sends a comment.
const heartbeat = 15 * time.Second

// events streams a session's events as server-sent events, read from its
// journal: each event's id is its seq and its type the event's type. A client
// resumes after the last id it saw (Last-Event-ID, or ?after=, the later) and
// gets exactly the events after it; ?from=state first sends the session's
// state folded from the journal (an event "state" whose id is the seq it is
// folded to), then the events after that seq, so a new client need not replay
// a long session. A watermark beyond the journal's last event gets the state
// first too, and the events after the state's seq. The stream ends after the
// session's last event.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, err := watermark(r)
	if err != nil {
		writeError(w, err)
		return
	}
	i, err := s.host.Get(id)
	if err != nil {
		writeError(w, err)
		return
	}
	var state any
	switch f := r.URL.Query().Get("from"); f {
	case "":
	case "state":
		if i.Seq > after {
			state, after = i, i.Seq
		}
	default:
		writeError(w, badRequest("from=%q: the only starting point is state (or none: the events after the watermark)", f))
		return
	}
	if after > i.Seq {
		// The client saw more than the journal holds (its tail was lost with
		// the disk, or the id is from elsewhere): the state first, so that it
		// learns where the record is, then what follows that.
		state, after = i, i.Seq
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
	if state != nil {
		writeSSE(bw, "state", after, state)
	}
	if flush() != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var mu sync.Mutex // one writer at a time: events or a heartbeat
	go func() {       // heartbeats, written between events under the stream's lock
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				mu.Lock()
				fmt.Fprint(bw, ": ping\n\n")
				err := flush()
				mu.Unlock()
				if err != nil {
					cancel()
					return
				}
			}
		}
	}()
	s.host.Tail(ctx, id, after, func(e trace.Event) error {
		mu.Lock()
		defer mu.Unlock()
		writeSSE(bw, string(e.Type), e.Seq, e)
		return flush()
	})
}

// watermark is the seq a client resumes after: ?after= or Last-Event-ID.
func watermark(r *http.Request) (int64, error) {
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, badRequest("after=%q: want an event seq (a non-negative integer)", v)
		}
		after = n
	}
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, badRequest("Last-Event-ID %q: want an event seq (a non-negative integer)", v)
		}
		after = max(after, n)
	}
	return after, nil
}

// writeSSE writes one event; JSON holds no raw newline, so data is one line.
func writeSSE(w *bufio.Writer, kind string, id int64, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", id, kind, b)
}
