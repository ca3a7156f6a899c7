package workspace

import (
	"bytes"
	"fmt"
)

// DiffOptions bounds a diff. The zero value is safe: every limit gets its default.
//
// No limit fails a diff: what a tree holds is the sandbox's to choose, and a run must
// not become agentbox's failure because of it. A change the diff cannot carry is left
// out with a marker line and listed in Summary.Omitted; past a limit on the whole
// diff it ends with a marker line and Summary.Truncated.
type DiffOptions struct {
	// MaxFileBytes caps the content read for one file. A change to a bigger file is
	// omitted. Default 8 MiB.
	MaxFileBytes int64
	// MaxTotalBytes caps the diff, marker lines included. Past it the diff ends
	// after the last whole file, with a marker line. Default 64 MiB.
	MaxTotalBytes int64
	// MaxEntries caps the directory entries listed in both trees, which bounds the
	// walk's work and memory (a directory's listing is held while it is compared:
	// 200,000 empty files cost about 60 MiB and 2 s). Past it the diff ends with a
	// marker line. Default 250,000.
	MaxEntries int
	// Binary carries binary files as git binary patches (git diff --binary), which
	// git apply and ApplyPatch can apply. By default they are only named, as
	// "Binary files a/x and b/x differ", as git diff does.
	Binary bool
	// IncludeGitDir diffs .git directories too. By default they are skipped, as git
	// skips them and git apply refuses to write into them.
	IncludeGitDir bool
	// IncludeIgnored diffs new files that the new tree's .gitignore files or
	// DefaultIgnore exclude. By default they are left out, with git's semantics
	// (gitignore(5)): what the old tree already holds is diffed whether a pattern
	// matches it or not, as git diffs tracked files, so a .gitignore never hides a
	// change to an existing file. .git/info/exclude and git's global excludes are
	// not read: the diff does not depend on the host's git configuration.
	IncludeIgnored bool
}

func (o DiffOptions) withDefaults() DiffOptions {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 8 << 20
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = 64 << 20
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 250_000
	}
	return o
}

// truncatedMarker starts the last line of a diff cut short at a limit. Diff lines
// that carry content start with a space, "+", "-" or "\\", so no file can forge it.
const truncatedMarker = "# agentbox: diff truncated before "

// Truncated reports whether diff, the output of Diff or DiffTrees, was cut short at
// a limit: changes past the cut are not in it, so a hash of it does not see them.
func Truncated(diff []byte) bool {
	last := bytes.TrimSuffix(diff, []byte("\n"))
	return bytes.HasPrefix(last[bytes.LastIndexByte(last, '\n')+1:], []byte(truncatedMarker))
}

// Summary counts the changes of a diff.
type Summary struct {
	Added, Modified, Deleted int // files and symlinks; a type change counts as both a deletion and an addition
	Binary                   int // changed files that are binary (counted above too)
	Ignored                  int // new files and directories left out by ignore rules (IncludeIgnored)
	Omitted                  []Omission
	Truncated                bool // MaxTotalBytes or MaxEntries was reached: the diff ends early
}

// Omission is a change the diff does not carry, with the reason.
type Omission struct {
	Path   string
	Reason string
}

// Diff renders the changes that the overlay upper layer upper makes to the lower
// layer lower as a git diff: applied with `git apply` (or ApplyPatch) to a copy of
// lower, it reproduces the merged view. Whiteouts (0/0 character devices, or empty
// files with a user.overlay.whiteout or trusted.overlay.whiteout xattr) delete the
// lower entry, or every file below a lower directory; directories marked opaque
// ("y" in user.overlay.opaque or trusted.overlay.opaque) hide the lower directory's
// contents. Files are compared by content, symlinks by target text, and the
// executable bit is carried as a mode change. Output is sorted by path.
//
// Neither tree is ever read through a symlink. Fifos, sockets and devices are not
// opened; they are omitted, as are files over the size limit, entries agentbox may
// not read, paths longer than 4096 bytes (git apply cannot create them) and the
// contents of directories more than 256 levels deep. Empty directories, ownership
// and other permission bits are not carried (git has no way to say them). An error
// means agentbox could not read the trees at all, or found an overlay feature it
// cannot render (ErrOverlay); never a limit.
func Diff(lower, upper string, opts DiffOptions) ([]byte, Summary, error) {
	out, sum, err := diffTrees(lower, upper, true, opts.withDefaults())
	if err != nil {
		err = fmt.Errorf("diff overlay: %w", err)
	}
	return out, sum, err
}

// DiffTrees is Diff for two plain directories: the changes that turn a into b.
// Character devices and xattrs in b mean nothing special.
func DiffTrees(a, b string, opts DiffOptions) ([]byte, Summary, error) {
	out, sum, err := diffTrees(a, b, false, opts.withDefaults())
	if err != nil {
		err = fmt.Errorf("diff trees: %w", err)
	}
	return out, sum, err
}
