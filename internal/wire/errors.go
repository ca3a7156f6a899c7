package wire

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Error is an error whose status and envelope were decided where it arose (a
// request that cannot be decoded, a body that came too slowly): Map returns them
// as they are.
type Error struct {
	Status int
	Body   client.Error
	Err    error // what errors.Is sees through it, if anything
}

func (e *Error) Error() string { return e.Body.Message }
func (e *Error) Unwrap() error { return e.Err }

// BadRequest is a 400 EINVAL whose message is the caller's mistake.
func BadRequest(format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	return &Error{Status: http.StatusBadRequest, Err: ErrBadRequest,
		Body: client.Error{Code: client.CodeInvalid, Message: msg}}
}

var (
	// ErrBadRequest means the request could not be decoded.
	ErrBadRequest = errors.New("bad request")
	// ErrShuttingDown means the server no longer takes this request.
	ErrShuttingDown = errors.New("server shutting down")
)

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
//
// Errors that carry their figures are decided first; every other error is looked
// up in rules, in order, by errors.Is, so a sentinel of env or workspace and a
// bare errno (syscall.Errno, inside an *fs.PathError or not) both find their row.
// An errno no row names is an internal error, never "unavailable": only a daemon
// that is really not there, shutting down, or short of descriptors or memory is a
// retryable 503.
func Map(err error, what string, red *Redactor) (int, client.Error) {
	var ae *Error
	var ce *client.Error
	var mbe *http.MaxBytesError
	var tle *workspace.TooLargeError
	var qe *env.QuotaError
	switch {
	case errors.As(err, &ce): // from a remote daemon: already an envelope
		st := ce.Status
		if st == 0 {
			st = http.StatusInternalServerError
		}
		return st, *ce
	case errors.As(err, &ae):
		return ae.Status, ae.Body
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, client.Error{Code: client.CodeTooLarge,
			Message:         fmt.Sprintf("request body exceeds the limit of %d bytes", mbe.Limit),
			SuggestedAction: "send less in one request: write files one by one, or upload a smaller tar"}
	case errors.As(err, &tle):
		return http.StatusRequestEntityTooLarge, client.Error{Code: client.CodeTooLarge, Message: red.redact(err.Error()),
			SuggestedAction: fmt.Sprintf("read a range with offset and length (at most %d bytes at a time)", tle.Limit)}
	case errors.As(err, &qe):
		return http.StatusTooManyRequests, client.Error{Code: client.CodeQuota, Message: red.redact(err.Error()), SuggestedAction: qe.Action}
	}
	for _, r := range rules {
		if !r.matches(err) {
			continue
		}
		e := client.Error{Code: r.code, Message: r.message, Retryable: r.retryable, SuggestedAction: r.action}
		switch e.Message {
		case "":
			e.Message = red.redact(err.Error())
		case notFound:
			// Fixed text: another tenant's object must look exactly like a missing one.
			e.Message = what + " not found"
		}
		return r.status, e
	}
	return http.StatusInternalServerError, client.Error{Code: client.CodeInternal, Message: "internal error"}
}

// notFound in a rule's message stands for "<what> not found".
const notFound = "\x00not found"

// rule is one row of the mapping: the errors it matches and what the caller sees.
// An empty message means the error's own text, redacted.
type rule struct {
	errs      []error
	remote    bool // also matches the network errors of a Remote (*url.Error, *net.OpError)
	status    int
	code      string
	retryable bool
	message   string
	action    string
}

func (r rule) matches(err error) bool {
	for _, t := range r.errs {
		if errors.Is(err, t) {
			return true
		}
	}
	if r.remote {
		var ue *url.Error
		var oe *net.OpError
		return errors.As(err, &ue) || errors.As(err, &oe)
	}
	return false
}

func errs(e ...error) []error { return e }

// rules is the mapping table, in order: the first row that matches wins.
var rules = []rule{
	{errs: errs(access.ErrUnauthenticated), status: http.StatusUnauthorized, code: client.CodeAuth, message: access.ErrUnauthenticated.Error(),
		action: "send Authorization: Bearer <token> with a token from the server's configuration (agentbox's CLI sends --token, else $AGENTBOX_TOKEN, else the agentbox.token a personal daemon writes beside its socket)"},
	{errs: errs(access.ErrOutsideRoots), status: http.StatusForbidden, code: client.CodePermission,
		action: "name a directory under the tenant's workspace_roots (mount_roots for a mount), or add it there in the file given to " +
			"agentbox serve --config (agentbox config init writes one); without --config serve allows your home directory and the directory it started in"},
	{errs: errs(access.ErrForbidden), status: http.StatusForbidden, code: client.CodePermission,
		action: "use a token with the needed scope, or ask the operator"},
	{errs: errs(access.ErrRate), status: http.StatusTooManyRequests, code: client.CodeRate, retryable: true, message: access.ErrRate.Error(),
		action: "retry after the Retry-After delay"},
	{errs: errs(env.ErrQuota), status: http.StatusTooManyRequests, code: client.CodeQuota,
		action: "destroy environments you no longer need, or ask for less memory_bytes or workspace_bytes"},
	{errs: errs(client.ErrNoDaemon), status: http.StatusServiceUnavailable, code: client.CodeUnavailable, retryable: true,
		message: "the agentbox daemon is not running", action: "start it with `agentbox serve`"},
	{errs: errs(ErrShuttingDown), status: http.StatusServiceUnavailable, code: client.CodeUnavailable, retryable: true,
		message: ErrShuttingDown.Error(), action: "retry once the server is back"},
	{errs: errs(env.ErrDestroyed), status: http.StatusNotFound, code: client.CodeNotFound,
		message: "environment destroyed or expired", action: "create a new environment"},
	{errs: errs(env.ErrPaused), status: http.StatusConflict, code: client.CodePaused,
		action: "resume the environment first (POST /v1/environments/{id}/resume, agentbox env resume ID)"},
	{errs: errs(env.ErrNotFound), status: http.StatusNotFound, code: client.CodeNotFound, message: notFound,
		action: "list your environments to find the right id"},
	{errs: errs(image.ErrNotFound), status: http.StatusNotFound, code: client.CodeNotFound,
		action: "list the templates this tenant may use (GET /v1/templates)"},
	{errs: errs(access.ErrBadTemplate, image.ErrNoRunner), status: http.StatusBadRequest, code: client.CodeInvalid,
		action: "fix the template name or build spec as the message says"},
	{errs: errs(workspace.ErrLimit), status: http.StatusRequestEntityTooLarge, code: client.CodeTooLarge,
		action: "narrow the request: a subdirectory, a smaller patch, a range"},
	{errs: errs(workspace.ErrEscape, workspace.ErrHardlink), status: http.StatusForbidden, code: client.CodePermission,
		action: "use a path inside the workspace, relative to its root"},
	{errs: errs(workspace.ErrChanged, env.ErrBusy, syscall.EBUSY, syscall.ETXTBSY, syscall.EAGAIN), status: http.StatusConflict,
		code: client.CodeBusy, retryable: true, action: "retry the request"},
	{errs: errs(workspace.ErrPatch, workspace.ErrNoMatch, workspace.ErrAmbiguous), status: http.StatusConflict, code: client.CodeConflict,
		action: "read the file again and make the patch or the old string match it exactly"},

	// The errnos of file operations.
	{errs: errs(syscall.ENOSPC, syscall.EDQUOT), status: http.StatusInsufficientStorage, code: client.CodeNoSpace,
		action: "the workspace is full: remove files it no longer needs, or create the environment with a larger workspace_bytes"},
	{errs: errs(syscall.EFBIG), status: http.StatusRequestEntityTooLarge, code: client.CodeTooLarge,
		action: "write a smaller file"},
	{errs: errs(syscall.ENAMETOOLONG), status: http.StatusBadRequest, code: client.CodeInvalid,
		action: "use shorter names: at most 255 bytes per name and 4095 per path"},
	{errs: errs(syscall.ELOOP), status: http.StatusBadRequest, code: client.CodeInvalid,
		action: "name the symbolic link's target instead of the link"},
	{errs: errs(fs.ErrNotExist), status: http.StatusNotFound, code: client.CodeNotFound, // ENOENT
		action: "list the directory to see what exists"},
	{errs: errs(fs.ErrExist, syscall.ENOTEMPTY), status: http.StatusConflict, code: client.CodeExist, // EEXIST
		action: "remove the entry first, or choose another name"},
	{errs: errs(syscall.EROFS), status: http.StatusForbidden, code: client.CodePermission,
		action: "that part of the workspace is read-only: write elsewhere"},
	{errs: errs(fs.ErrPermission), status: http.StatusForbidden, code: client.CodePermission, // EACCES, EPERM
		action: "check the entry's permissions inside the environment (ls -l)"},
	{errs: errs(env.ErrInvalid, workspace.ErrInvalidPath, workspace.ErrNotRegular, workspace.ErrSymlink,
		syscall.EISDIR, syscall.ENOTDIR, syscall.EINVAL, syscall.EXDEV, fs.ErrInvalid, ErrBadRequest),
		status: http.StatusBadRequest, code: client.CodeInvalid,
		action: "fix the request as the message says"},

	// The daemon itself, short of something it gets back.
	{errs: errs(syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM), status: http.StatusServiceUnavailable, code: client.CodeUnavailable,
		retryable: true, message: "the agentbox daemon is short of descriptors or memory", action: "retry after the Retry-After delay"},
	{errs: errs(context.DeadlineExceeded), status: http.StatusServiceUnavailable, code: client.CodeUnavailable, retryable: true,
		message: "the operation timed out", action: "retry, or raise the timeout"},
	{remote: true, status: http.StatusServiceUnavailable, code: client.CodeUnavailable, retryable: true,
		message: "the agentbox daemon did not answer", action: "retry; check that the daemon runs"},
}
