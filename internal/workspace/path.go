package workspace

import (
	"io/fs"
	"path"
	"strings"
)

// maxPathLen is Linux's PATH_MAX; longer paths cannot be resolved anyway.
const maxPathLen = 4096

// CleanPath turns a caller's slash-separated path into a clean path relative to the
// workspace root ("." for the root itself, also for ""). It rejects NUL bytes and
// overlong paths (ErrInvalidPath), absolute paths and paths whose ".." components
// climb above the root (ErrEscape). Inner ".." components are resolved lexically:
// "a/../b" is "b", whatever "a" is on disk.
//
// The check is for clear errors only: symlinks inside the workspace can still point
// anywhere, and the operations of Root stop those through os.Root.
func CleanPath(p string) (string, error) {
	switch {
	case strings.IndexByte(p, 0) >= 0, len(p) > maxPathLen:
		return "", ErrInvalidPath
	case strings.HasPrefix(p, "/"):
		return "", ErrEscape
	}
	c := path.Clean(p) // "" becomes "."
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", ErrEscape
	}
	return c, nil
}

// cleanEntry is CleanPath for operations that need an entry inside the root, not the
// root itself. The error is an *fs.PathError for op.
func cleanEntry(op, p string) (string, error) {
	c, err := cleanAny(op, p)
	if err == nil && c == "." {
		err = &fs.PathError{Op: op, Path: p, Err: ErrInvalidPath}
	}
	return c, err
}

// cleanAny is CleanPath with its error wrapped in an *fs.PathError for op.
func cleanAny(op, p string) (string, error) {
	c, err := CleanPath(p)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: p, Err: err}
	}
	return c, nil
}

// hasDotGit reports whether a component of the clean path p is ".git" in any case,
// which git apply refuses to touch.
func hasDotGit(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// linkStaysInside reports whether a symlink at the clean path linkPath with the given
// target resolves, lexically, to a place inside the root. It cannot see symlinked
// parents; it keeps archives and patches from planting obviously escaping links,
// while os.Root is what refuses to follow the others.
func linkStaysInside(linkPath, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || strings.IndexByte(target, 0) >= 0 {
		return false
	}
	j := path.Join(path.Dir(linkPath), target)
	return j != ".." && !strings.HasPrefix(j, "../")
}
