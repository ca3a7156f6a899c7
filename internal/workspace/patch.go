package workspace

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// PatchOp says what a patch did to one file.
type PatchOp string

const (
	PatchAdd    PatchOp = "add"
	PatchModify PatchOp = "modify"
	PatchDelete PatchOp = "delete"
	PatchRename PatchOp = "rename"
	PatchCopy   PatchOp = "copy"
)

// PatchReport lists the files a patch changed, in patch order.
type PatchReport struct {
	Files []PatchedFile
}

// PatchedFile is one file change of an applied patch.
type PatchedFile struct {
	Op      PatchOp
	Path    string // the file after the change (before it, for a deletion)
	OldPath string // the source of a rename or copy
	Added   int64  // lines
	Deleted int64  // lines
}

// ApplyPatch applies a git diff (or a plain unified diff) to the workspace, all or
// nothing. Every file's change is parsed and applied in memory first, against the
// state left by the earlier changes of the same patch; only if all of them apply are
// files written. A hunk must match exactly where it says (no fuzz, no offset); a
// failure is a *PatchError naming the file, the hunk (number, @@ header) and the
// file line where it stopped matching.
//
// It supports new, deleted, renamed and copied files, mode changes (the executable
// bit), symlinks (mode 120000) and git binary patches. Like git apply it refuses
// paths that escape the root, paths with a .git component, paths below a symlink,
// symlinks whose target leaves the workspace, and binary patches without data. For
// plain unified diffs (no "diff --git" line) a leading "a/" or "b/" is stripped
// from names, as git apply's default -p1 would; other names are taken as they are.
// A patch that mixes git and plain file headers is read as a git patch.
//
// The write phase deletes first (removing directories it empties, as git does),
// then writes each file atomically. A file may replace a directory only if the
// patch deletes every file below it; one that holds nothing but empty
// directories, which no diff carries, is removed whole (git apply refuses it:
// "Directory not empty"), so a reversed diff makes the file again. "All or nothing" holds against anything wrong
// with the patch; an I/O error in the write phase itself can leave earlier files
// written.
func (r *Root) ApplyPatch(patch []byte) (PatchReport, error) {
	if int64(len(patch)) > r.opts.MaxFileBytes {
		return PatchReport{}, &TooLargeError{Path: "patch", Size: int64(len(patch)), Limit: r.opts.MaxFileBytes}
	}
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return PatchReport{}, &PatchError{Err: fmt.Errorf("parse: %w", err)}
	}
	if len(files) == 0 {
		return PatchReport{}, &PatchError{Err: errors.New("no file changes found")}
	}
	if len(files) > r.opts.MaxEntries {
		return PatchReport{}, &LimitError{What: "files in the patch", Limit: int64(r.opts.MaxEntries)}
	}
	pl := &plan{r: r, state: map[string]*vfile{}, traditional: !hasGitHeader(patch)}
	var rep PatchReport
	for _, f := range files {
		pf, err := pl.apply(f)
		if err != nil {
			return PatchReport{}, err
		}
		rep.Files = append(rep.Files, pf)
	}
	if err := pl.checkReplacedDirs(); err != nil {
		return PatchReport{}, err
	}
	if err := pl.commit(); err != nil {
		return PatchReport{}, err
	}
	return rep, nil
}

// hasGitHeader reports whether the patch has a git file header; without one every
// file header is a traditional one.
func hasGitHeader(patch []byte) bool {
	return bytes.HasPrefix(patch, []byte("diff --git ")) || bytes.Contains(patch, []byte("\ndiff --git "))
}

// PatchFiles returns the workspace paths a patch names (the old and new names of
// each file, as ApplyPatch reads them) and how many files it deletes, without
// applying it: what a permission policy judges before the patch is applied.
func PatchFiles(patch []byte) (paths []string, deletes int, err error) {
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return nil, 0, err
	}
	pl := &plan{traditional: !hasGitHeader(patch)}
	seen := map[string]bool{}
	for _, f := range files {
		for _, n := range []string{f.OldName, f.NewName} {
			if n = pl.name(n); n != "" && !seen[n] {
				seen[n] = true
				paths = append(paths, n)
			}
		}
		if f.IsDelete {
			deletes++
		}
	}
	return paths, deletes, nil
}
