package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/workspace"
)

// apiError is an error with its envelope decided where it arose (decoding, limits).
type apiError struct {
	status int
	e      client.Error
	err    error
}

func (e *apiError) Error() string { return e.e.Message }
func (e *apiError) Unwrap() error { return e.err }

func badRequest(format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	return &apiError{status: http.StatusBadRequest, err: ErrBadRequest,
		e: client.Error{Code: client.CodeInvalid, Message: msg}}
}

// Redactor removes host paths from messages that reach a caller.
type Redactor struct{ prefixes []string }

// NewRedactor redacts every occurrence of the given host directories.
func NewRedactor(prefixes ...string) *Redactor {
	r := &Redactor{}
	for _, p := range prefixes {
		p = strings.TrimRight(p, "/")
		if len(p) > 1 {
			r.prefixes = append(r.prefixes, p)
		}
	}
	return r
}

func (r *Redactor) redact(s string) string {
	if r == nil {
		return s
	}
	for _, p := range r.prefixes {
		s = strings.ReplaceAll(s, p, "<host>")
	}
	return s
}

// Map turns err into an HTTP status and the envelope a caller sees. The message
// is the error's own text (redacted) where that text is about the caller's request,
// and a fixed text where it could tell one tenant's objects from missing ones or
// carry internal detail. what names the object for ENOENT ("environment \"x\"").
func Map(err error, what string, red *Redactor) (int, client.Error) {
	msg := func() string { return red.redact(err.Error()) }
	var ae *apiError
	var ce *client.Error
	var mbe *http.MaxBytesError
	var tle *workspace.TooLargeError
	var ne net.Error
	switch {
	case errors.As(err, &ce): // from a remote daemon: already an envelope
		st := ce.Status
		if st == 0 {
			st = http.StatusInternalServerError
		}
		return st, *ce
	case errors.As(err, &ae):
		return ae.status, ae.e
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, client.Error{Code: client.CodeTooLarge,
			Message:         fmt.Sprintf("request body exceeds the limit of %d bytes", mbe.Limit),
			SuggestedAction: "send less in one request: write files one by one, or upload a smaller tar"}
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, client.Error{Code: client.CodeAuth, Message: ErrUnauthenticated.Error(),
			SuggestedAction: "send Authorization: Bearer <token> with a token from the server's configuration"}
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, client.Error{Code: client.CodePermission, Message: msg(),
			SuggestedAction: "use a token with the needed scope, or ask the operator"}
	case errors.Is(err, ErrRate):
		return http.StatusTooManyRequests, client.Error{Code: client.CodeRate, Message: ErrRate.Error(), Retryable: true,
			SuggestedAction: "retry after the Retry-After delay"}
	case errors.Is(err, env.ErrQuota):
		return http.StatusTooManyRequests, client.Error{Code: client.CodeQuota, Message: msg(),
			SuggestedAction: "destroy environments you no longer need, or ask for less memory"}
	case errors.Is(err, client.ErrNoDaemon):
		return http.StatusServiceUnavailable, client.Error{Code: client.CodeUnavailable, Message: "the agentbox daemon is not running",
			Retryable: true, SuggestedAction: "start it with `agentbox serve`"}
	case errors.Is(err, ErrShuttingDown):
		return http.StatusServiceUnavailable, client.Error{Code: client.CodeUnavailable, Message: ErrShuttingDown.Error(),
			Retryable: true, SuggestedAction: "retry once the server is back"}
	case errors.Is(err, env.ErrDestroyed):
		return http.StatusNotFound, client.Error{Code: client.CodeNotFound, Message: "environment destroyed or expired",
			SuggestedAction: "create a new environment"}
	case errors.Is(err, env.ErrNotFound):
		// Fixed text: another tenant's object must look exactly like a missing one.
		return http.StatusNotFound, client.Error{Code: client.CodeNotFound, Message: what + " not found",
			SuggestedAction: "list your environments to find the right id"}
	case errors.As(err, &tle):
		return http.StatusRequestEntityTooLarge, client.Error{Code: client.CodeTooLarge, Message: msg(),
			SuggestedAction: fmt.Sprintf("read a range with offset and length (at most %d bytes at a time)", tle.Limit)}
	case errors.Is(err, workspace.ErrLimit):
		return http.StatusRequestEntityTooLarge, client.Error{Code: client.CodeTooLarge, Message: msg(),
			SuggestedAction: "narrow the request: a subdirectory, a smaller patch, a range"}
	case errors.Is(err, workspace.ErrEscape), errors.Is(err, workspace.ErrHardlink):
		return http.StatusForbidden, client.Error{Code: client.CodePermission, Message: msg(),
			SuggestedAction: "use a path inside the workspace, relative to its root"}
	case errors.Is(err, workspace.ErrChanged), errors.Is(err, env.ErrBusy):
		return http.StatusConflict, client.Error{Code: client.CodeBusy, Message: msg(), Retryable: true,
			SuggestedAction: "retry the request"}
	case errors.Is(err, workspace.ErrPatch), errors.Is(err, workspace.ErrNoMatch), errors.Is(err, workspace.ErrAmbiguous):
		return http.StatusConflict, client.Error{Code: client.CodeConflict, Message: msg(),
			SuggestedAction: "read the file again and make the patch or the old string match it exactly"}
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound, client.Error{Code: client.CodeNotFound, Message: msg(),
			SuggestedAction: "list the directory to see what exists"}
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY):
		return http.StatusConflict, client.Error{Code: client.CodeExist, Message: msg()}
	case errors.Is(err, fs.ErrPermission):
		return http.StatusForbidden, client.Error{Code: client.CodePermission, Message: msg()}
	case errors.Is(err, env.ErrInvalid), errors.Is(err, workspace.ErrInvalidPath),
		errors.Is(err, workspace.ErrNotRegular), errors.Is(err, workspace.ErrSymlink),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, client.Error{Code: client.CodeInvalid, Message: msg()}
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, client.Error{Code: client.CodeUnavailable, Message: "the operation timed out",
			Retryable: true, SuggestedAction: "retry, or raise the timeout"}
	case errors.As(err, &ne): // only a Remote meets network errors
		return http.StatusServiceUnavailable, client.Error{Code: client.CodeUnavailable, Message: "the agentbox daemon did not answer",
			Retryable: true, SuggestedAction: "retry; check that the daemon runs"}
	}
	return http.StatusInternalServerError, client.Error{Code: client.CodeInternal, Message: "internal error"}
}

// writeError writes err as an envelope, logs what the caller does not see, and
// counts policy denials.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, e := Map(err, describe(r), s.red)
	if status == http.StatusInternalServerError {
		id := w.Header().Get(requestIDHeader)
		e.Message = "internal error (request " + id + ")"
		s.log.Error("internal error", "request", id, "route", r.Pattern, "err", err)
	}
	s.metrics.denied(e.Code)
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
