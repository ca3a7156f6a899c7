package egress

import "errors"

// ErrBadHost is wrapped by every error about a host name that is not a valid one.
var ErrBadHost = errors.New("invalid host name")
