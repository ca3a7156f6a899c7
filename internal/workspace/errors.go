package workspace

import (
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrEscape means a path names something outside the workspace: it is absolute,
	// climbs out with "..", or resolves through a symlink that leaves the root.
	ErrEscape = errors.New("path escapes the workspace")
	// ErrInvalidPath means a path cannot name a workspace entry: it holds a NUL byte,
	// is too long, or names the root where an entry inside it is required.
	ErrInvalidPath = errors.New("invalid path")
	// ErrNotRegular means the entry is a directory, fifo, socket or device where a
	// regular file is required. Such files are refused, never opened for I/O.
	ErrNotRegular = errors.New("not a regular file")
	// ErrSymlink means an operation that replaces or edits an entry found a symlink
	// there; those operations act on the entry itself, never on a link's target.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrHardlink means a regular file has more than one link and Options does not
	// allow reading such files (the other link may live outside the workspace).
	ErrHardlink = errors.New("file has more than one hard link")
	// ErrChanged means an entry was replaced between two steps of one operation
	// (for instance swapped for a symlink while being opened).
	ErrChanged = errors.New("entry changed during the operation")
	// ErrTooLarge is matched by every TooLargeError.
	ErrTooLarge = errors.New("file too large")
	// ErrLimit is matched by every LimitError.
	ErrLimit = errors.New("limit exceeded")
	// ErrNoMatch means StrReplace found no occurrence of the old string.
	ErrNoMatch = errors.New("old string not found")
	// ErrAmbiguous is matched by every AmbiguousError.
	ErrAmbiguous = errors.New("old string matches more than once")
	// ErrPatch is matched by every PatchError.
	ErrPatch = errors.New("patch does not apply")
	// ErrOverlay means the upper layer uses an overlayfs feature Diff cannot read
	// (redirected directories, metacopy files); mounts with userxattr never do.
	ErrOverlay = errors.New("unsupported overlay layer")
	// ErrUnsupported is returned on systems other than Linux.
	ErrUnsupported = errors.New("workspace: not supported on this system")
)

// TooLargeError reports a file bigger than the limit of one operation. Size is the
// whole file's size, so a caller can answer EFBIG and suggest a range to read.
type TooLargeError struct {
	Path  string
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes exceeds the limit of %d bytes", quote(e.Path), e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// LimitError reports a cap on a whole operation: entries visited, total bytes,
// directory depth, diff size.
type LimitError struct {
	What  string
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %d", e.What, e.Limit)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

// AmbiguousError reports that StrReplace's old string occurs Count times (Count > 1),
// counting overlapping occurrences.
type AmbiguousError struct {
	Path  string
	Count int
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s: old string matches %d times; add context to make it unique", quote(e.Path), e.Count)
}

func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// PatchError reports why ApplyPatch applied nothing: the file, and for a hunk that
// does not match, the hunk's 1-based number within that file's change, its @@
// header and the 1-based line of the file where it stopped matching.
type PatchError struct {
	Path   string // "" when the patch as a whole is at fault
	Hunk   int
	Header string
	Line   int64
	Err    error
}

func (e *PatchError) Error() string {
	s := "patch"
	if e.Path != "" {
		s += " " + quote(e.Path)
	}
	if e.Hunk > 0 {
		s += fmt.Sprintf(": hunk #%d %s", e.Hunk, e.Header)
		if e.Line > 0 {
			s += fmt.Sprintf(" at line %d", e.Line)
		}
	}
	return s + ": " + e.Err.Error()
}

func (e *PatchError) Unwrap() error { return e.Err }

func (e *PatchError) Is(target error) bool { return target == ErrPatch }

// quote prints a workspace path readably even when it holds newlines or bytes that
// are not UTF-8.
func quote(p string) string {
	if strconv.CanBackquote(p) {
		return p
	}
	return strconv.Quote(p)
}
