package workspace

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// checkOldMode refuses a change whose old mode says symlink for a regular file or
// the reverse. Without a mode (a plain diff) a symlink's content is its target, as
// for git apply.
func checkOldMode(mode fs.FileMode, v *vfile) error {
	if v.isDir {
		return fmt.Errorf("%w: is a directory", ErrNotRegular)
	}
	if mode == 0 {
		return nil
	}
	wantLink := mode&0o170000 == 0o120000
	if wantLink != v.symlink {
		if v.symlink {
			return ErrSymlink
		}
		return fmt.Errorf("%w: patch expects a symlink", ErrNotRegular)
	}
	return nil
}

// gitMode decodes a git file mode: 100644, 100755 or 120000.
func gitMode(m fs.FileMode) (symlink bool, perm fs.FileMode, err error) {
	switch m & 0o170000 {
	case 0o120000:
		return true, 0, nil
	case 0o100000:
		if m&0o111 != 0 {
			return false, 0o755, nil
		}
		return false, 0o644, nil
	}
	return false, 0, fmt.Errorf("%w: unsupported file mode %o", ErrNotRegular, m)
}

// applyContent applies f's hunks (or binary fragment) to src in memory.
func applyContent(f *gitdiff.File, src []byte, limit int64) ([]byte, error) {
	var out bytes.Buffer
	if f.IsBinary {
		if f.BinaryFragment == nil {
			return nil, errors.New("binary change without data (regenerate the patch with git diff --binary)")
		}
		if err := checkOID(f.OldOIDPrefix, src, "old"); err != nil {
			return nil, err
		}
		a := gitdiff.NewBinaryApplier(&out, bytes.NewReader(src), gitdiff.WithMaxBinaryFragmentBytes(limit))
		if err := a.ApplyFragment(f.BinaryFragment); err != nil {
			return nil, err
		}
		if err := a.Close(); err != nil {
			return nil, err
		}
		if err := checkOID(f.NewOIDPrefix, out.Bytes(), "new"); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	}
	// Fragments must be applied in order of position; errors name them as numbered
	// in the patch.
	idx := make([]int, len(f.TextFragments))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return int(f.TextFragments[a].OldPosition - f.TextFragments[b].OldPosition)
	})
	a := gitdiff.NewTextApplier(&out, bytes.NewReader(src))
	for _, i := range idx {
		frag := f.TextFragments[i]
		if err := a.ApplyFragment(frag); err != nil {
			pe := &PatchError{Hunk: i + 1, Header: frag.Header(), Err: err}
			var ae *gitdiff.ApplyError
			if errors.As(err, &ae) {
				pe.Line = ae.Line
			}
			return nil, pe
		}
		if int64(out.Len()) > limit {
			return nil, &LimitError{What: "patched file size", Limit: limit}
		}
	}
	if err := a.Close(); err != nil {
		return nil, err
	}
	if int64(out.Len()) > limit {
		return nil, &LimitError{What: "patched file size", Limit: limit}
	}
	return out.Bytes(), nil
}

// checkOID verifies content against a full git blob id from the patch's index line,
// as git apply does for binary patches; abbreviated ids are not checked.
func checkOID(oid string, data []byte, side string) error {
	if len(oid) != 2*sha1.Size {
		return nil
	}
	if strings.Trim(oid, "0") == "" {
		if len(data) != 0 {
			return fmt.Errorf("%w: %s content should be empty", &gitdiff.Conflict{}, side)
		}
		return nil
	}
	if got := blobID(data); got != oid {
		return fmt.Errorf("%w: %s content is blob %s, patch expects %s", &gitdiff.Conflict{}, side, got, oid)
	}
	return nil
}

// blobID is git's object id of data as a blob (SHA-1 repositories).
func blobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
