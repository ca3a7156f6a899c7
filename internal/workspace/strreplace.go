package workspace

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// StrReplace replaces the one occurrence of old in the regular file rel with new and
// writes the file back atomically, keeping its permissions. old must occur exactly
// once, overlapping occurrences included: none is ErrNoMatch, several an
// *AmbiguousError with the count. rel must not be a symlink (ErrSymlink).
func (r *Root) StrReplace(rel, old, new string) error {
	p, err := cleanEntry("str_replace", rel)
	if err != nil {
		return err
	}
	if old == "" {
		return &fs.PathError{Op: "str_replace", Path: p, Err: fmt.Errorf("%w: old string is empty", fs.ErrInvalid)}
	}
	d, err := r.root.OpenRoot(path.Dir(p))
	if err != nil {
		return pathErr("str_replace", p, err)
	}
	data, _, err := r.loadEntry(d, path.Base(p), p)
	d.Close()
	if err != nil {
		return pathErr("str_replace", p, err)
	}
	at, n := indexUnique(data, []byte(old))
	switch {
	case n == 0:
		return &fs.PathError{Op: "str_replace", Path: p, Err: ErrNoMatch}
	case n > 1:
		return &AmbiguousError{Path: p, Count: n}
	}
	out := make([]byte, 0, len(data)-len(old)+len(new))
	out = append(append(append(out, data[:at]...), new...), data[at+len(old):]...)
	if int64(len(out)) > r.opts.MaxFileBytes {
		return &TooLargeError{Path: p, Size: int64(len(out)), Limit: r.opts.MaxFileBytes}
	}
	err = r.replace(p, replaceOpts{keepPerm: true}, func(f *os.File) error {
		_, err := f.Write(out)
		return err
	})
	return pathErr("str_replace", p, err)
}

// indexUnique returns the position of the first occurrence of sub in s and the
// number of occurrences, overlapping ones included.
func indexUnique(s, sub []byte) (first, count int) {
	first = -1
	for off := 0; ; {
		i := bytes.Index(s[off:], sub)
		if i < 0 {
			return first, count
		}
		if count == 0 {
			first = off + i
		}
		count++
		off += i + 1
	}
}
