package grade

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbox/agentbox/internal/task"
)

// touched returns every path a patch names: old and new names of each file,
// including created and deleted ones, deduplicated and sorted. For a plain
// unified diff (no "diff --git" line) it strips a leading "a/" or "b/" as the
// environment's applier does (workspace.Root.ApplyPatch), and keeps the raw name
// too: a name checked twice costs nothing, one the applier sees differently
// would bypass the check (Grade also cross-checks the applier's report).
func touched(patch []byte) ([]string, error) {
	plain := !hasGitHeader(patch)
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return nil, fmt.Errorf("parse patch: %w", err)
	}
	var paths []string
	for _, f := range files {
		for _, name := range []string{f.OldName, f.NewName} {
			if name == "" {
				continue
			}
			paths = append(paths, name)
			if rest, ok := strings.CutPrefix(name, "a/"); plain && ok {
				paths = append(paths, rest)
			} else if rest, ok := strings.CutPrefix(name, "b/"); plain && ok {
				paths = append(paths, rest)
			}
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// tampered returns the paths of a patch that t protects, and those that are an
// ancestor directory of a hidden file: a file or symlink there would stand in
// the way of copying the hidden tests in (or redirect them).
func tampered(t *task.Task, paths []string) []string {
	var hits []string
	for _, p := range paths {
		if t.Protected(p) || slices.ContainsFunc(t.HiddenFiles, func(h string) bool { return strings.HasPrefix(h, p+"/") }) {
			hits = append(hits, p)
		}
	}
	return hits
}
