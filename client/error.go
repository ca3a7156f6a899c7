package client

import (
	"errors"
	"fmt"
)

// Error is the API's error envelope: {"error": {"code", "message", "retryable",
// "suggested_action"}}. Status is the HTTP status it came with.
type Error struct {
	Code            string `json:"code" jsonschema:"EINVAL, EAUTH, EPERM, ENOENT, EEXIST, EBUSY, ECONFLICT, EPAUSED, EFBIG, EQUOTA, ERATE, ENOSPC, ETIMEDOUT, EUNAVAIL or EINTERNAL"`
	Message         string `json:"message"`
	Retryable       bool   `json:"retryable" jsonschema:"whether the same request may succeed later"`
	SuggestedAction string `json:"suggested_action,omitempty" jsonschema:"what the caller could do instead"`
	Status          int    `json:"-"`
}

// Envelope is the JSON body of every error response.
type Envelope struct {
	Error *Error `json:"error"`
}

func (e *Error) Error() string {
	s := e.Code + ": " + e.Message
	if e.SuggestedAction != "" {
		s += " (" + e.SuggestedAction + ")"
	}
	return s
}

// Error codes. Each comes with one HTTP status.
const (
	CodeInvalid     = "EINVAL"    // 400
	CodeAuth        = "EAUTH"     // 401
	CodePermission  = "EPERM"     // 403
	CodeNotFound    = "ENOENT"    // 404
	CodeExist       = "EEXIST"    // 409
	CodeBusy        = "EBUSY"     // 409, retryable
	CodeConflict    = "ECONFLICT" // 409: a patch or replacement does not fit the file
	CodePaused      = "EPAUSED"   // 409: the environment is paused; resume it first
	CodeTimeout     = "ETIMEDOUT" // 408: the request body came too slowly
	CodeTooLarge    = "EFBIG"     // 413
	CodeQuota       = "EQUOTA"    // 429
	CodeRate        = "ERATE"     // 429, retryable
	CodeNoSpace     = "ENOSPC"    // 507: the workspace is full
	CodeInternal    = "EINTERNAL" // 500
	CodeUnavailable = "EUNAVAIL"  // 503, retryable
)

// IsCode reports whether err is an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// ErrNoDaemon is matched by every *NoDaemonError.
var ErrNoDaemon = errors.New("no agentbox daemon")

// NoDaemonError reports that nothing listens at the daemon's address.
type NoDaemonError struct {
	Addr string
	Err  error
}

func (e *NoDaemonError) Error() string {
	return fmt.Sprintf("no agentbox daemon at %s: start one with `agentbox serve`", e.Addr)
}

func (e *NoDaemonError) Unwrap() []error { return []error{ErrNoDaemon, e.Err} }
