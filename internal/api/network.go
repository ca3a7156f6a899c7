package api

import (
	"context"
	"net/http"
	"strconv"

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
	streamSSE(s, w, r, errNetworkStreamEnded,
		func(ctx context.Context, after int64) (<-chan client.NetworkEvent, error) {
			return s.svc.NetworkEvents(ctx, r.PathValue("id"), uint64(after))
		},
		func(ev client.NetworkEvent) sseFrame {
			return sseFrame{kind: "connection", id: strconv.FormatUint(ev.Seq, 10)}
		})
}

var errNetworkStreamEnded = &wire.Error{Status: http.StatusNotFound, Body: client.Error{Code: client.CodeNotFound,
	Message: "the environment was destroyed", SuggestedAction: "create a new environment"}}
