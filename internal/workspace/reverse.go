package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// ErrIrreversible: the patch cannot be reversed (a binary change without its
// old content, a rename or a copy).
var ErrIrreversible = errors.New("the patch cannot be reversed")

// Reverse returns the patch that undoes patch, as git apply -R would apply it:
// each file with its sides swapped (a new file
// deleted, a deleted one created, modes and ids exchanged) and each hunk's
// additions and deletions exchanged. It is what rolls a live workspace back to
// an earlier diff (tool.Env.Rewind). It reverses what Diff writes; a binary
// change carried without its old content, a rename or a copy is ErrIrreversible.
func Reverse(patch []byte) ([]byte, error) {
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return nil, &PatchError{Err: fmt.Errorf("parse: %w", err)}
	}
	var dels, rest strings.Builder
	for _, f := range files {
		r, err := reverseFile(f)
		if err != nil {
			return nil, err
		}
		out := &rest
		if r.IsDelete { // a path replaced by another kind is deleted before it is made again
			out = &dels
		}
		out.WriteString(octalBackslashes(r.String()))
	}
	return []byte(dels.String() + rest.String()), nil
}

func reverseFile(f *gitdiff.File) (*gitdiff.File, error) {
	name := f.NewName
	if name == "" {
		name = f.OldName
	}
	switch {
	case f.IsRename || f.IsCopy:
		return nil, fmt.Errorf("%w: %s is renamed or copied", ErrIrreversible, name)
	case f.IsBinary && (f.BinaryFragment == nil || f.ReverseBinaryFragment == nil):
		return nil, fmt.Errorf("%w: %s is a binary change without its old content", ErrIrreversible, name)
	}
	r := &gitdiff.File{OldName: f.NewName, NewName: f.OldName, IsNew: f.IsDelete, IsDelete: f.IsNew,
		OldOIDPrefix: f.NewOIDPrefix, NewOIDPrefix: f.OldOIDPrefix, IsBinary: f.IsBinary,
		BinaryFragment: f.ReverseBinaryFragment, ReverseBinaryFragment: f.BinaryFragment}
	switch {
	case f.IsNew:
		r.OldMode = f.NewMode
	case f.IsDelete:
		r.NewMode = f.OldMode
	case f.NewMode != 0: // a mode change
		r.OldMode, r.NewMode = f.NewMode, f.OldMode
	default:
		r.OldMode = f.OldMode
	}
	for _, frag := range f.TextFragments {
		rf := &gitdiff.TextFragment{Comment: frag.Comment,
			OldPosition: frag.NewPosition, OldLines: frag.NewLines, NewPosition: frag.OldPosition, NewLines: frag.OldLines,
			LinesAdded: frag.LinesDeleted, LinesDeleted: frag.LinesAdded,
			LeadingContext: frag.LeadingContext, TrailingContext: frag.TrailingContext}
		// Each run of changed lines is written deletions first, as diff does.
		var dels, adds []gitdiff.Line
		flush := func() {
			rf.Lines = append(append(rf.Lines, dels...), adds...)
			dels, adds = nil, nil
		}
		for _, l := range frag.Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				dels = append(dels, gitdiff.Line{Op: gitdiff.OpDelete, Line: l.Line})
			case gitdiff.OpDelete:
				adds = append(adds, gitdiff.Line{Op: gitdiff.OpAdd, Line: l.Line})
			default:
				flush()
				rf.Lines = append(rf.Lines, l)
			}
		}
		flush()
		r.TextFragments = append(r.TextFragments, rf)
	}
	return r, nil
}
