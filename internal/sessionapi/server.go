package sessionapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/coordinator"
)

// maxBody bounds a request body (a spec, an answer).
const maxBody = 1 << 20

// Server serves a Host's sessions.
type Server struct {
	host  *coordinator.Host
	token string
	mux   *http.ServeMux
}

// New serves h to callers holding token (at least 16 bytes).
func New(h *coordinator.Host, token string) (*Server, error) {
	if len(token) < 16 {
		return nil, errors.New("sessionapi: the token must be at least 16 bytes")
	}
	s := &Server{host: h, token: token, mux: http.NewServeMux()}
	for _, rt := range s.routes() {
		h := rt.h
		if rt.auth {
			h = s.auth(h)
		}
		s.mux.HandleFunc(rt.pattern, h)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{http.StatusNotFound, client.Error{Code: client.CodeNotFound,
			Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), SuggestedAction: "see api/coordinator.yaml for the routes"}})
	})
	return s, nil
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

// auth lets a request through with the token, in constant time.
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
			writeError(w, &apiError{http.StatusUnauthorized, client.Error{Code: client.CodeAuth, Message: "missing or wrong bearer token",
				SuggestedAction: "send Authorization: Bearer <token> with the token of agentbox coordinator serve --token-file"}})
			return
		}
		next(w, r)
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var spec coordinator.Spec
	if err := decode(r, &spec); err != nil {
		writeError(w, err)
		return
	}
	i, err := s.host.Create(spec)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, i)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	is, err := s.host.List()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": is})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	i, err := s.host.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	i, err := s.host.Cancel(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	i, err := s.host.Get(r.PathValue("id"))
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
		out, err := s.host.Answer(r.PathValue("id"), r.PathValue("request"), allow, a.Scope, "api")
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
	i, err := s.host.Resolve(r.Context(), r.PathValue("id"), r.PathValue("call"), v.As, v.Note)
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
	st, i, err := s.host.Steer(r.PathValue("id"), v.Kind, v.Message, "api")
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
