package coordinator

import (
	"context"
	"time"

	"github.com/agentbox/agentbox/internal/trace"
)

// tailPoll is how often Tail looks for new events in the journal.
const tailPoll = 50 * time.Millisecond

// Tail calls fn with the tenant's session's events after seq after, in order, as the
// journal commits them, and returns once the session's last event is sent (it
// ended, or was cancelled with no driver) or ctx ends. The journal is the only
// source: a client that reconnects with the seq it saw last (the SSE
// Last-Event-ID) gets exactly the events it missed, whichever driver, and
// whichever coordinator process, committed them.
func (h *Host) Tail(ctx context.Context, tenant, id string, after int64, fn func(trace.Event) error) error {
	s, err := h.session(tenant, id)
	if err != nil {
		return err
	}
	t := time.NewTicker(tailPoll)
	defer t.Stop()
	send := func() (int, error) {
		evs, err := s.store.Events(after)
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return 0, err
			}
			after = e.Seq
		}
		return len(evs), nil
	}
	for {
		n, err := send()
		if err != nil {
			return err
		}
		if n == 0 && h.over(s) {
			// Over: every event is committed; send those that came between
			// the read above and this check.
			_, err := send()
			return err
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
