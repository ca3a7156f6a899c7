package task

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// localPath resolves a path from task.yaml that must stay inside the task
// directory: relative, without "..", and not through a symlink.
func (l *loader) localPath(field, p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", l.errf(field, "contains a NUL byte")
	}
	clean := filepath.Clean(p)
	if p == "" || !filepath.IsLocal(clean) {
		return "", l.errf(field, "%q must be a path inside the task directory, relative to it, without \"..\"", p)
	}
	full := filepath.Join(l.dir, clean)
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", l.errf(field, "%q: %v", p, unwrapPathError(err))
	}
	if real != full {
		return "", l.errf(field, "%q goes through a symlink; name the real path", p)
	}
	return full, nil
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readRegular reads a regular file (not a symlink) of at most limit bytes.
func readRegular(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes exceeds the limit of %d", fi.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}
