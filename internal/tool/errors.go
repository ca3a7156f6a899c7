package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Code classifies a tool failure so the policy can branch on it.
type Code string

const (
	EPERM         Code = "EPERM"         // not allowed: scope, the permission policy, or a path outside the workspace
	EASK          Code = "EASK"          // the permission policy asks a person first; the tool did not run
	EINVAL        Code = "EINVAL"        // arguments do not match the schema or make no sense
	ENOENT        Code = "ENOENT"        // no such file, artifact or environment
	EFBIG         Code = "EFBIG"         // too large to return or write at once
	ETIMEDOUT     Code = "ETIMEDOUT"     // the operation ran out of time
	ETRANSIENT    Code = "ETRANSIENT"    // try again: busy, raced with a change
	ENOMATCH      Code = "ENOMATCH"      // str_replace's old string or a patch hunk does not match
	EAMBIGUOUS    Code = "EAMBIGUOUS"    // str_replace's old string matches more than once
	EPRECONDITION Code = "EPRECONDITION" // the tool's precondition does not hold
	EBUDGET       Code = "EBUDGET"       // the session cannot pay for the call
	EQUOTA        Code = "EQUOTA"        // the environment's quota is used up
	ENOTOOL       Code = "ENOTOOL"       // no tool by that name is offered
	ECANCELLED    Code = "ECANCELLED"    // the session was cancelled during the call
	EINTERNAL     Code = "EINTERNAL"     // a bug or an unexpected failure; not the model's fault
)

// Suggested actions: short words a policy can branch on. Message says the rest.
const (
	ActStop      = "stop"       // do not retry; change approach or end the session
	ActFixArgs   = "fix_args"   // call again with arguments that match the schema
	ActReadRange = "read_range" // read a smaller range
	ActNarrow    = "narrow"     // ask for less: a subdirectory, a smaller patch
	ActListDir   = "list_dir"   // look at what exists
	ActReread    = "reread"     // read the file again and match it exactly
	ActRetry     = "retry"      // the same call may succeed now
	ActRunTests  = "run_tests"  // run test.run first
	ActUseTool   = "use_listed_tool"
	ActNone      = "none"
)

// Error is a tool failure as the policy sees it. It wraps its cause, which is never
// shown to the model.
type Error struct {
	Code            Code   `json:"code"`
	Message         string `json:"message"`
	Retryable       bool   `json:"retryable"`
	SuggestedAction string `json:"suggested_action"`

	err error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func (e *Error) Unwrap() error { return e.err }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, retryable bool, action, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: retryable, SuggestedAction: action}
}

// maxMessage caps an error message shown to the model.
const maxMessage = 1024

// FromErr maps an error from a handler, the environment or the workspace to the
// envelope's error. It is the only place that knows both vocabularies. Messages of
// env and workspace errors name workspace-relative paths only; an error it does not
// recognise becomes EINTERNAL with a fixed message (its text goes to the operator's
// log through Outcome.Internal, never to the model).
func FromErr(err error) (e *Error, known bool) {
	if err == nil {
		return nil, true
	}
	msg := err.Error()
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	mk := func(code Code, retry bool, act string) (*Error, bool) {
		return &Error{Code: code, Message: msg, Retryable: retry, SuggestedAction: act, err: err}, true
	}
	var te *Error
	var tle *workspace.TooLargeError
	switch {
	case errors.As(err, &te):
		return te, true
	case errors.Is(err, context.Canceled):
		return mk(ECANCELLED, false, ActStop)
	case errors.Is(err, context.DeadlineExceeded):
		return mk(ETIMEDOUT, true, ActNarrow)
	case errors.Is(err, workspace.ErrEscape), errors.Is(err, workspace.ErrHardlink), errors.Is(err, fs.ErrPermission):
		return mk(EPERM, false, ActStop)
	case errors.As(err, &tle):
		e, _ := mk(EFBIG, false, ActReadRange)
		e.Message = fmt.Sprintf("%s (read at most %d bytes at a time with offset and length)", msg, tle.Limit)
		return e, true
	case errors.Is(err, workspace.ErrLimit):
		return mk(EFBIG, false, ActNarrow)
	case errors.Is(err, workspace.ErrNoMatch):
		return mk(ENOMATCH, false, ActReread)
	case errors.Is(err, workspace.ErrAmbiguous):
		return mk(EAMBIGUOUS, false, ActReread)
	case errors.Is(err, workspace.ErrPatch):
		var pe *workspace.PatchError
		if errors.As(err, &pe) && pe.Path == "" && pe.Hunk == 0 {
			return mk(EINVAL, false, ActFixArgs) // the patch does not parse
		}
		return mk(ENOMATCH, false, ActReread)
	case errors.Is(err, workspace.ErrChanged), errors.Is(err, env.ErrBusy):
		return mk(ETRANSIENT, true, ActRetry)
	case errors.Is(err, env.ErrQuota):
		return mk(EQUOTA, false, ActStop)
	case errors.Is(err, env.ErrDestroyed):
		return mk(ENOENT, false, ActStop)
	case errors.Is(err, env.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return mk(ENOENT, false, ActListDir)
	case errors.Is(err, env.ErrInvalid), errors.Is(err, workspace.ErrInvalidPath),
		errors.Is(err, workspace.ErrNotRegular), errors.Is(err, workspace.ErrSymlink),
		errors.Is(err, fs.ErrInvalid), errors.Is(err, fs.ErrExist),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ENOTEMPTY):
		return mk(EINVAL, false, ActFixArgs)
	}
	return &Error{Code: EINTERNAL, Message: "internal error", SuggestedAction: ActStop, err: err}, false
}
