package workspace

import (
	"bytes"
	"compress/zlib"
	"io/fs"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// contextLines is the context of every hunk, as git diff's default.
const contextLines = 3

// nullOID is git's id for "no object", used for the missing side of a binary patch.
const nullOID = "0000000000000000000000000000000000000000"

// version is one side of a changed path: a regular file or a symlink (whose data is
// its target) with its content.
type version struct {
	symlink bool
	exec    bool
	data    []byte
}

// mode is the git mode of v: 120000, 100755 or 100644.
func (v *version) mode() fs.FileMode {
	switch {
	case v.symlink:
		return 0o120000
	case v.exec:
		return 0o100755
	}
	return 0o100644
}

// fileDiff renders the change of path p from old to new as one file of a git diff.
// old or new is nil for an addition or a deletion; if both are given they are of
// the same kind (a type change is a deletion plus an addition). It reports whether
// the content is binary; binary content is carried as a literal git binary patch
// if binaryPatch is set, else only named.
func fileDiff(p string, old, new *version, binaryPatch bool) (text string, binary bool) {
	f := &gitdiff.File{OldName: p, NewName: p}
	var a, b []byte
	switch {
	case old == nil:
		f.OldName, f.IsNew, f.NewMode, b = "", true, new.mode(), new.data
	case new == nil:
		f.NewName, f.IsDelete, f.OldMode, a = "", true, old.mode(), old.data
	default:
		a, b, f.OldMode = old.data, new.data, old.mode()
		if new.mode() != old.mode() {
			f.NewMode = new.mode()
		}
	}
	if bytes.Equal(a, b) { // a mode change, or an empty file added or deleted
		return octalBackslashes(f.String()), false
	}
	// The index line carries the mode of an unchanged-mode file (so that a symlink
	// is known as one) and, in full, lets git apply check a binary patch.
	f.OldOIDPrefix, f.NewOIDPrefix = nullOID, nullOID
	if old != nil {
		f.OldOIDPrefix = blobID(a)
	}
	if new != nil {
		f.NewOIDPrefix = blobID(b)
	}
	binary = isBinary(a) || isBinary(b)
	switch {
	case binary && binaryPatch:
		f.IsBinary, f.BinaryFragment = true, literal(b)
		return octalBackslashes(f.String()), true
	case binary:
		f.IsBinary = true
	default:
		f.TextFragments = textFragments(a, b)
	}
	f.OldOIDPrefix, f.NewOIDPrefix = f.OldOIDPrefix[:7], f.NewOIDPrefix[:7] // git's short form
	return octalBackslashes(f.String()), binary
}

// octalBackslashes writes the backslashes of quoted names in the header of one
// file's diff as \134 rather than \\. Both mean the same to git, but go-gitdiff
// (and so ApplyPatch) cannot parse a quoted name that ends in \\. Quoted names
// escape every backslash, and no other escape has a backslash as its second byte,
// so pairs are matched left to right without ambiguity.
func octalBackslashes(text string) string {
	end := len(text)
	for _, m := range []string{"\n@@ ", "\nGIT binary patch\n", "\nBinary files "} {
		if i := strings.Index(text, m); i >= 0 && i < end {
			end = i
		}
	}
	head := text[:end]
	if !strings.Contains(head, "\"") {
		return text
	}
	return strings.ReplaceAll(head, `\\`, `\134`) + text[end:]
}

// isBinary is git's rule: a NUL byte in the first 8000 bytes. Text that is not
// UTF-8 is still text.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// literal is a binary fragment that replaces the whole content with data.
func literal(data []byte) *gitdiff.BinaryFragment {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(data) // a bytes.Buffer does not fail
	zw.Close()
	return &gitdiff.BinaryFragment{Method: gitdiff.BinaryPatchLiteral, Size: int64(len(data)), RawData: z.Bytes()}
}

// textFragments computes the hunks that turn a into b, with contextLines of context
// and hunks merged when their context would touch, as git does. The line diff is
// go-udiff's; the hunks are assembled here in one pass over its edits (udiff's own
// unified renderer rescans the text per edit and does not produce gitdiff types).
func textFragments(a, b []byte) []*gitdiff.TextFragment {
	al, bl := splitLines(a), splitLines(b)
	diffs := lcs.DiffLines(al, bl)
	var frags []*gitdiff.TextFragment
	for i := 0; i < len(diffs); {
		j := i
		for j+1 < len(diffs) && diffs[j+1].Start-diffs[j].End <= 2*contextLines {
			j++
		}
		first, last := diffs[i], diffs[j]
		oldStart := max(first.Start-contextLines, 0)
		oldEnd := min(last.End+contextLines, len(al))
		newStart := first.ReplStart - (first.Start - oldStart)
		f := &gitdiff.TextFragment{
			LeadingContext:  int64(first.Start - oldStart),
			TrailingContext: int64(oldEnd - last.End),
		}
		add := func(op gitdiff.LineOp, lines []string) {
			for _, l := range lines {
				f.Lines = append(f.Lines, gitdiff.Line{Op: op, Line: l})
			}
		}
		add(gitdiff.OpContext, al[oldStart:first.Start])
		for k := i; k <= j; k++ {
			d := diffs[k]
			if k > i {
				add(gitdiff.OpContext, al[diffs[k-1].End:d.Start])
			}
			add(gitdiff.OpDelete, al[d.Start:d.End])
			add(gitdiff.OpAdd, bl[d.ReplStart:d.ReplEnd])
			f.LinesDeleted += int64(d.End - d.Start)
			f.LinesAdded += int64(d.ReplEnd - d.ReplStart)
		}
		add(gitdiff.OpContext, al[last.End:oldEnd])
		f.OldLines = int64(oldEnd - oldStart)
		f.NewLines = f.OldLines - f.LinesDeleted + f.LinesAdded
		// An empty range is numbered by the line before it (0 for the start).
		f.OldPosition, f.NewPosition = int64(oldStart)+1, int64(newStart)+1
		if f.OldLines == 0 {
			f.OldPosition--
		}
		if f.NewLines == 0 {
			f.NewPosition--
		}
		frags = append(frags, f)
		i = j + 1
	}
	return frags
}

// splitLines splits data after each newline; the last line may lack one.
func splitLines(data []byte) []string {
	var lines []string
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 {
			n = len(data)
		}
		lines = append(lines, string(data[:n]))
		data = data[n:]
	}
	return lines
}
