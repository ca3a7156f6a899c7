package sessionapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agentbox/agentbox/internal/trace"
	"github.com/agentbox/agentbox/internal/wire/sse"
)

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
	after, err := sse.After(r)
	if err != nil {
		writeError(w, badRequest("%s", err))
		return
	}
	i, err := s.host.Get(tenant(r), id)
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
	st := sse.Open(w)
	if state != nil {
		st.Event("state", strconv.FormatInt(after, 10), state)
	}
	if st.Flush() != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go st.KeepAlive(ctx, cancel)
	s.host.Tail(ctx, tenant(r), id, after, func(e trace.Event) error {
		st.Event(string(e.Type), strconv.FormatInt(e.Seq, 10), e)
		return st.Flush()
	})
}
