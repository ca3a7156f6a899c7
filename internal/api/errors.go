package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

// writeError writes err as an envelope, logs what the caller does not see, and
// counts policy denials.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, e := wire.Map(err, describe(r), s.red)
	if status == http.StatusInternalServerError {
		id := w.Header().Get(requestIDHeader)
		e.Message = "internal error (request " + id + ")"
		s.log.Error("internal error", "request", id, "route", r.Pattern, "err", err)
	}
	tenant := ""
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		tenant = info.caller.Tenant
	}
	s.metrics.Denied(tenant, e.Code)
	if e.Retryable && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, client.Envelope{Error: &e})
}

// describe names the object a request is about, for ENOENT messages. It uses only
// what the caller sent, so it is the same for a missing and a foreign object.
func describe(r *http.Request) string {
	if ref := r.PathValue("ref"); ref != "" {
		return fmt.Sprintf("artifact %q", ref)
	}
	if p := r.PathValue("proc"); p != "" {
		return fmt.Sprintf("process %q of environment %q", p, r.PathValue("id"))
	}
	if id := r.PathValue("id"); id != "" {
		return fmt.Sprintf("environment %q", id)
	}
	return "object"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"EINTERNAL","message":"encode response","retryable":false}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
