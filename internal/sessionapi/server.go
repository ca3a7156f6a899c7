package sessionapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/coordinator"
)

// maxBody bounds a request body (a spec, an answer).
const maxBody = 1 << 20

// Server serves a Host's sessions.
type Server struct {
	host *coordinator.Host
	auth *access.Auth
	mux  *http.ServeMux
}

// New serves h to the callers auth knows (config.Coordinator's tokens): each
// request acts for its token's tenant, on that tenant's sessions only.
func New(h *coordinator.Host, auth *access.Auth) *Server {
	s := &Server{host: h, auth: auth, mux: http.NewServeMux()}
	for _, rt := range s.routes() {
		h := rt.h
		if rt.auth {
			h = s.authenticate(h)
		}
		s.mux.HandleFunc(rt.pattern, h)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{http.StatusNotFound, client.Error{Code: client.CodeNotFound,
			Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), SuggestedAction: "see api/coordinator.yaml for the routes"}})
	})
	return s
}

type route struct {
	pattern string
	auth    bool
	h       http.HandlerFunc
}

// routes are the API's operations, as api/coordinator.yaml describes them.
func (s *Server) routes() []route {
	return []route{
		{"GET /healthz", false, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		}},
		{"POST /v1/sessions", true, s.create},
		{"GET /v1/sessions", true, s.list},
		{"GET /v1/sessions/{id}", true, s.get},
		{"GET /v1/sessions/{id}/events", true, s.events},
		{"POST /v1/sessions/{id}/cancel", true, s.cancel},
		{"GET /v1/sessions/{id}/approvals", true, s.approvals},
		{"POST /v1/sessions/{id}/approvals/{request}/approve", true, s.answer(true)},
		{"POST /v1/sessions/{id}/approvals/{request}/deny", true, s.answer(false)},
		{"POST /v1/sessions/{id}/calls/{call}/resolve", true, s.resolve},
		{"POST /v1/sessions/{id}/steer", true, s.steer},
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// authenticate lets a request through with a known bearer token (the
// Authorization header only, compared in constant time by access.Auth) within
// its tenant's rate, the caller in its context.
func (s *Server) authenticate(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.auth.Request(r)
		switch {
		case errors.Is(err, access.ErrRate):
			writeError(w, &apiError{http.StatusTooManyRequests, client.Error{Code: client.CodeRate, Message: err.Error(), Retryable: true,
				SuggestedAction: "slow down: the tenant's rate (tenants.NAME.rate) is spent; retry shortly"}})
			return
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentbox coordinator"`)
			writeError(w, &apiError{http.StatusUnauthorized, client.Error{Code: client.CodeAuth, Message: "missing or wrong bearer token",
				SuggestedAction: "send Authorization: Bearer <token> with a token of agentbox coordinator serve (--token-file, or the tokens of its --config)"}})
			return
		}
		next(w, r.WithContext(access.WithCaller(r.Context(), c)))
	}
}

// tenant is the tenant the request's token names (authenticate put it there).
func tenant(r *http.Request) string {
	c, _ := access.CallerFrom(r.Context())
	return c.Tenant
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var spec coordinator.Spec
	if err := decode(r, &spec); err != nil {
		writeError(w, err)
		return
	}
	i, err := s.host.Create(tenant(r), spec)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, i)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	is, err := s.host.List(tenant(r))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": is})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	i, err := s.host.Get(tenant(r), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	i, err := s.host.Cancel(tenant(r), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	i, err := s.host.Get(tenant(r), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": i.Awaiting})
}

// AnswerRequest is the body of approve (deny takes none).
type AnswerRequest struct {
	// Scope grants a capability for the rest of the session instead of
	// allowing the call once; "suggested": each item's suggested capability.
	Scope string `json:"scope,omitempty"`
}

func (s *Server) answer(allow bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var a AnswerRequest
		if r.ContentLength != 0 {
			if err := decode(r, &a); err != nil {
				writeError(w, err)
				return
			}
		}
		out, err := s.host.Answer(tenant(r), r.PathValue("id"), r.PathValue("request"), allow, a.Scope, "api")
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// ResolveRequest is the body of resolve: a person's verdict on a call
// recovery left unknown.
type ResolveRequest struct {
	As   string `json:"as"` // succeeded or failed
	Note string `json:"note,omitempty"`
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	var v ResolveRequest
	if err := decode(r, &v); err != nil {
		writeError(w, err)
		return
	}
	i, err := s.host.Resolve(r.Context(), tenant(r), r.PathValue("id"), r.PathValue("call"), v.As, v.Note)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

// SteerRequest is the body of steer.
type SteerRequest struct {
	Kind    string `json:"kind"` // supplement, correct, replace or ask
	Message string `json:"message"`
}

func (s *Server) steer(w http.ResponseWriter, r *http.Request) {
	var v SteerRequest
	if err := decode(r, &v); err != nil {
		writeError(w, err)
		return
	}
	st, i, err := s.host.Steer(tenant(r), r.PathValue("id"), v.Kind, v.Message, "api")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"steer": st, "session": i})
}

// decode reads a JSON body into v, refusing unknown fields and trailing data.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return badRequest("the body is larger than %d bytes", maxBody)
		}
		return badRequest("the body is not the expected JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

// apiError is an error whose status and envelope are decided.
type apiError struct {
	status int
	body   client.Error
}

func (e *apiError) Error() string { return e.body.Message }

func badRequest(format string, a ...any) error {
	return &apiError{http.StatusBadRequest, client.Error{Code: client.CodeInvalid, Message: fmt.Sprintf(format, a...),
		SuggestedAction: "fix the request as the message says (api/coordinator.yaml)"}}
}

// The suggested actions of an unknown session and of a conflict; the sessions
// CLI gives its own commands instead.
const (
	HintList  = "list the sessions (GET /v1/sessions)"
	HintState = "read the session's state (GET /v1/sessions/{id})"
)

// writeError maps err to the API's status and envelope: the host's sentinels
// to theirs; anything else is internal, its text not shown.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	e := client.Error{Code: client.CodeInternal, Message: "internal error", Status: http.StatusInternalServerError}
	switch {
	case errors.As(err, &ae):
		e, e.Status = ae.body, ae.status
	case errors.Is(err, coordinator.ErrNotFound):
		e = client.Error{Code: client.CodeNotFound, Message: err.Error(), SuggestedAction: HintList, Status: http.StatusNotFound}
	case errors.Is(err, coordinator.ErrInvalid):
		e = client.Error{Code: client.CodeInvalid, Message: err.Error(), SuggestedAction: "fix the request as the message says", Status: http.StatusBadRequest}
	case errors.Is(err, coordinator.ErrQuota):
		e = client.Error{Code: client.CodeQuota, Message: err.Error(), SuggestedAction: "cancel one of the tenant's sessions (POST /v1/sessions/{id}/cancel) or wait for one to end", Status: http.StatusTooManyRequests}
	case errors.Is(err, coordinator.ErrConflict), errors.Is(err, coordinator.ErrEnded):
		e = client.Error{Code: client.CodeConflict, Message: err.Error(), SuggestedAction: HintState, Status: http.StatusConflict}
	case errors.Is(err, context.Canceled):
		return // the client went
	}
	writeJSON(w, e.Status, client.Envelope{Error: &e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"EINTERNAL","message":"internal error","retryable":false}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
