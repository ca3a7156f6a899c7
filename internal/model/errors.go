package model

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrAuth means the provider refused the key (401) or its permissions (403).
	// Retrying cannot help; the operator must fix the key.
	ErrAuth = errors.New("model: authentication failed")
	// ErrContextOverflow means the prompt does not fit the model's context window.
	// The caller can shorten the conversation (TrimToFit) and try once more.
	ErrContextOverflow = errors.New("model: context window exceeded")
	// ErrRateLimited means the provider answered 429.
	ErrRateLimited = errors.New("model: rate limited")
	// ErrUnavailable means a server-side failure: 5xx, Anthropic's 529 overloaded,
	// 408, or an error event in the middle of a stream.
	ErrUnavailable = errors.New("model: provider unavailable")
	// ErrBadRequest means the provider rejected the request (other 4xx), or the
	// adapter refused to send it because it breaks the protocol's rules.
	ErrBadRequest = errors.New("model: request rejected")
	// ErrBadResponse means a response arrived but is not what the protocol allows:
	// not JSON, no choices, a broken event stream, too large.
	ErrBadResponse = errors.New("model: malformed response")
	// ErrNetwork means the exchange failed below HTTP: connection refused or reset,
	// a stream that stopped early or went idle.
	ErrNetwork = errors.New("model: network error")
	// ErrCircuitOpen means the Breaker refused the call without trying.
	ErrCircuitOpen = errors.New("model: circuit open")
	// ErrMalformedArgs is matched by every ArgsError.
	ErrMalformedArgs = errors.New("model: malformed tool arguments")
)

// APIError is an error status from a provider (or an error event inside a stream,
// with Status 0). It matches one of ErrAuth, ErrContextOverflow, ErrRateLimited,
// ErrUnavailable and ErrBadRequest.
type APIError struct {
	Provider string `json:"provider"`
	Status   int    `json:"status"`
	// Type and Code are the provider's own classification
	// (invalid_request_error, context_length_exceeded, overloaded_error).
	Type string `json:"type,omitempty"`
	Code string `json:"code,omitempty"`
	// Message is the provider's message, cut to 512 bytes, with the API key
	// removed; empty for authentication errors, whose text may quote the key.
	Message   string `json:"message,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// RetryAfter is the wait the provider asked for (Retry-After, retry-after-ms),
	// 0 if none.
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	// ContextLimit and RequestedTokens are read from a context overflow message
	// when it states them (0 otherwise); TrimOnOverflow sizes its cut with them.
	ContextLimit    int `json:"context_limit,omitempty"`
	RequestedTokens int `json:"requested_tokens,omitempty"`

	kind error
}

func (e *APIError) Error() string {
	s := "model: " + e.Provider + ": "
	if e.Status != 0 {
		s += fmt.Sprintf("HTTP %d", e.Status)
	} else {
		s += "stream error"
	}
	if e.kind != nil {
		s += " (" + ErrorClass(e.kind) + ")"
	}
	if c := firstNonEmpty(e.Code, e.Type); c != "" {
		s += " " + c
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

func (e *APIError) Unwrap() error { return e.kind }

// NetworkError is a failure below HTTP. It matches ErrNetwork and its cause.
type NetworkError struct {
	Provider string
	Err      error
}

func (e *NetworkError) Error() string { return "model: " + e.Provider + ": " + e.Err.Error() }

func (e *NetworkError) Unwrap() []error { return []error{ErrNetwork, e.Err} }

// ResponseError is a response that breaks its protocol. It matches ErrBadResponse and
// its cause.
type ResponseError struct {
	Provider  string
	RequestID string
	Err       error
}

func (e *ResponseError) Error() string {
	s := "model: " + e.Provider + ": malformed response: " + e.Err.Error()
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

func (e *ResponseError) Unwrap() []error { return []error{ErrBadResponse, e.Err} }

// CircuitOpenError is returned by a Breaker that is open, or half-open with its one
// probe in flight. It matches ErrCircuitOpen.
type CircuitOpenError struct {
	Provider string
	// RetryIn is how long until the breaker lets a probe through (0: a probe is
	// running now).
	RetryIn time.Duration
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("model: %s: circuit open, next probe in %s", e.Provider, e.RetryIn)
}

func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }

// RetryError is returned by Retry when it stops retrying an error that is
// retryable: attempts or total delay used up, or a Retry-After longer than allowed.
type RetryError struct {
	Attempts int           `json:"attempts"`
	Waited   time.Duration `json:"waited_ns"`
	Reason   string        `json:"reason"`
	Err      error         `json:"-"`
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("model: gave up after %d attempts (waited %s, %s): %v", e.Attempts, e.Waited, e.Reason, e.Err)
}

func (e *RetryError) Unwrap() error { return e.Err }

// Retryable reports whether trying the same request again may succeed: rate limits,
// server-side failures and network errors, but not a cancelled context.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNetwork)
}

// ErrorClass names the kind of an error for traces and metrics: "auth",
// "context_overflow", "rate_limited", "unavailable", "bad_request", "bad_response",
// "network", "circuit_open", "malformed_args", "canceled", "other", or "" for nil.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, ErrAuth):
		return "auth"
	case errors.Is(err, ErrContextOverflow):
		return "context_overflow"
	case errors.Is(err, ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrBadRequest):
		return "bad_request"
	case errors.Is(err, ErrBadResponse):
		return "bad_response"
	case errors.Is(err, ErrNetwork):
		return "network"
	case errors.Is(err, ErrCircuitOpen):
		return "circuit_open"
	case errors.Is(err, ErrMalformedArgs):
		return "malformed_args"
	}
	return "other"
}

// invalidf is a request the adapter refuses to send.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
