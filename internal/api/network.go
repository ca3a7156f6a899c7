package api

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

func (s *Server) setNetwork(w http.ResponseWriter, r *http.Request) {
	var req client.Network
	if err := s.decode(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.svc.SetNetwork(r.Context(), r.PathValue("id"), req); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) networkLog(w http.ResponseWriter, r *http.Request) {
	after, err := intQuery(r, "after")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	evs, err := s.svc.NetworkLog(r.Context(), r.PathValue("id"), uint64(after))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs})
}

// networkEvents streams an environment's connections as server-sent events, kind
// "connection", id the seq: those its log holds after ?after= (or Last-Event-ID),
// then each as it ends. The stream ends with an "error" event when the environment
// is destroyed, or by closing at shutdown, after which the client reconnects.
func (s *Server) networkEvents(w http.ResponseWriter, r *http.Request) {
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
	ch, err := s.svc.NetworkEvents(ctx, r.PathValue("id"), uint64(after))
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
					_, e := wire.Map(errNetworkStreamEnded, describe(r), s.red)
					writeSSE(bw, "error", "", client.Envelope{Error: &e})
					flush()
				}
				return
			}
			writeSSE(bw, "connection", strconv.FormatUint(ev.Seq, 10), ev)
			if len(ch) == 0 && flush() != nil {
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

var errNetworkStreamEnded = &wire.Error{Status: http.StatusNotFound, Body: client.Error{Code: client.CodeNotFound,
	Message: "the environment was destroyed", SuggestedAction: "create a new environment"}}
