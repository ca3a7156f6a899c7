package image

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound: no image has that name or id.
	ErrNotFound = errors.New("no such image")
	// ErrUnsafe: an archive entry tried to leave its layer directory, or to write
	// through a link. The import stops and publishes nothing.
	ErrUnsafe = errors.New("unsafe archive entry")
	// ErrUnsupported: images need Linux (openat2, overlayfs, idmapped mounts).
	ErrUnsupported = errors.New("images are supported only on Linux")
	// ErrNotRoot: the store needs root to own layer files by the foreign id range.
	ErrNotRoot = errors.New("the image store needs root: layer files are owned by systemd's foreign uid range")
	// ErrNoRunner: a build step that runs commands was given no Runner.
	ErrNoRunner = errors.New("this step runs commands in a build sandbox, and none was given")
)

// EntryError is a problem with one archive entry, named as the archive names it.
type EntryError struct {
	Entry string
	Err   error
}

func (e *EntryError) Error() string { return fmt.Sprintf("archive entry %q: %v", e.Entry, e.Err) }
func (e *EntryError) Unwrap() error { return e.Err }

// LimitError says an import went past one of its Limits: What (with the value
// reached) against Limit, the field of Limits that set it.
type LimitError struct {
	What  string
	Field string
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: over the limit of %d (Limits.%s)", e.What, e.Limit, e.Field)
}

// DigestError says content did not hash to the digest that named it.
type DigestError struct {
	What      string
	Want, Got string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s: content hashes to %s, but is named %s", e.What, e.Got, e.Want)
}
