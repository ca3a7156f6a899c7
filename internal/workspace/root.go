package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Options bounds what one Root operation may do. The zero value is safe: every
// limit gets its default and hardlinked files are refused.
type Options struct {
	// MaxReadBytes caps what one ReadFile returns (whole file or range).
	// Default 8 MiB.
	MaxReadBytes int64
	// MaxFileBytes caps one file written (WriteFile, StrReplace, ApplyPatch,
	// UntarFrom), one file loaded to be edited, and the patch text. Default 64 MiB.
	MaxFileBytes int64
	// MaxTotalBytes caps the bytes one bulk operation moves: TarTo, UntarFrom, and
	// the files ApplyPatch holds in memory. Default 1 GiB.
	MaxTotalBytes int64
	// MaxEntries caps the entries one operation visits: List, TarTo, UntarFrom, and
	// the files of one patch. Default 100,000.
	MaxEntries int
	// AllowHardlinks lets reads (ReadFile, StrReplace, ApplyPatch, TarTo) open
	// regular files with more than one link. os.Root cannot tell whether the other
	// link lies outside the workspace, so by default they fail with ErrHardlink.
	// Local git clones (.git/objects) and pnpm stores use hardlinks legitimately.
	AllowHardlinks bool
}

func (o Options) withDefaults() Options {
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = 8 << 20
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 64 << 20
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = 1 << 30
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 100_000
	}
	return o
}

// maxDepth bounds directory recursion (TarTo, Diff), each level holding descriptors.
const maxDepth = 256

// Root is a workspace directory opened for traversal-resistant file operations.
// Every path given to its methods is relative to the directory, slash-separated and
// untrusted. Methods are safe for concurrent use.
//
// Reads (ReadFile, List, TarTo's walk) follow symlinks that stay inside the root,
// as os.Root does. Operations that replace or edit an entry (WriteFile, StrReplace,
// ApplyPatch, Remove) act on the entry itself: they never write through a symlink,
// and they replace files by renaming a new file over them, so a hardlink never
// carries a write out of the workspace.
type Root struct {
	root *os.Root
	opts Options
}

// OpenRoot opens dir, a trusted host path, as a workspace root.
func OpenRoot(dir string, opts Options) (*Root, error) {
	if err := platformCheck(); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace root: %w", err)
	}
	escapeOnce.Do(func() { escapeErr = probeEscape(r) })
	return &Root{root: r, opts: opts.withDefaults()}, nil
}

// Close releases the root's directory descriptor.
func (r *Root) Close() error { return r.root.Close() }

// escapeErr is the unexported error os.Root returns when a path leaves the root.
var (
	escapeOnce sync.Once
	escapeErr  error
)

// probeEscape obtains os.Root's escape error by asking for the root's parent, so
// that it can be matched with errors.Is rather than by its text.
func probeEscape(r *os.Root) error {
	_, err := r.Lstat("..")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
}

// pathErr rewrites an error of a Root operation so that it names the relative path
// p, never the host path of the workspace (which *os.File errors carry), and maps
// os.Root's escape error onto ErrEscape.
func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	inner := err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		inner = pe.Err
	case errors.As(err, &le):
		inner = le.Err
	}
	if escapeErr != nil && errors.Is(inner, escapeErr) {
		inner = ErrEscape
	}
	return &fs.PathError{Op: op, Path: p, Err: inner}
}
