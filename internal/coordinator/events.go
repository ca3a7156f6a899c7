package coordinator

import (
	"context"
	"time"

	"github.com/agentbox/agentbox/internal/trace"
)

// tailPoll is how often Tail looks for new events in the journal.
const tailPoll = 50 * time.Millisecond

// Tail calls fn with the session's events after seq after, in order, as the
// journal commits them, and returns once the session's last event is sent (it
// ended, or was cancelled with no driver) or ctx ends. The journal is the only
// source: a client that reconnects with the seq it saw last (the SSE
// Last-Event-ID) gets exactly the events it missed, whichever driver, and
// whichever coordinator process, committed them.
func (h *Host) Tail(ctx context.Context, id string, after int64, fn func(trace.Event) error) error {
	s, err := h.session(id)
	if err != nil {
		return err
	}
	t := time.NewTicker(tailPoll)
	defer t.Stop()
	for {
		// The state is read before the events: a session found over is over
		// with every one of its events among those read next.
		over := h.over(s)
		evs, err := s.store.Events(after)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if over {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// over: no event will be added to the session's journal by this process.
func (h *Host) over(s *session) bool {
	st, err := s.store.Load()
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return st.End != nil || (s.cancelled && s.cancel == nil)
}
