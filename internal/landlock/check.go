package landlock

import (
	"errors"
	"io/fs"
	"os"
)

// check verifies that every path exists and is a directory or a non-directory as its
// field requires. Landlock itself would only fail on a missing path, and would reject
// directory rights on a file with a bare EINVAL; this names the field and the path.
func (r Ruleset) check() error {
	for _, f := range r.fields() {
		for _, p := range f.paths {
			fi, err := os.Stat(p) // follows symlinks, as Landlock's O_PATH open does
			switch {
			case err != nil:
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err // the path is already in PathError
				}
				return &PathError{Field: f.name, Path: p, Err: err}
			case f.kind == kindDir && !fi.IsDir():
				return &PathError{Field: f.name, Path: p, Err: errNotDir}
			case f.kind == kindFile && fi.IsDir():
				return &PathError{Field: f.name, Path: p, Err: errIsDir}
			}
		}
	}
	return nil
}
