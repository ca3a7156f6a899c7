package task

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

const (
	maxPatch    = 8 << 20
	maxRepoFile = 64 << 20
)

// reference checks that the reference patch parses, touches no protected path,
// and applies exactly (no fuzz) to repo/. It applies in memory; nothing is written.
func (l *loader) reference(t *Task) error {
	data, err := readRegular(t.Reference, maxPatch)
	if err != nil {
		return &Error{File: t.Reference, Err: err}
	}
	files, _, err := gitdiff.Parse(bytes.NewReader(data))
	if err != nil {
		return &Error{File: t.Reference, Err: fmt.Errorf("not a unified diff: %w", err)}
	}
	if len(files) == 0 {
		return &Error{File: t.Reference, Err: errors.New("no file changes; the reference must be a unified diff relative to repo/ (git diff output)")}
	}
	ap := applier{repo: t.Repo, state: map[string]*[]byte{}}
	for _, f := range files {
		for _, name := range []string{f.OldName, f.NewName} {
			if name == "" {
				continue
			}
			if err := checkPatchName(name); err != nil {
				return &Error{File: t.Reference, Err: err}
			}
			if t.Protected(name) {
				return &Error{File: t.Reference, Err: fmt.Errorf("changes the protected path %q; the grader would reject this patch from an agent", name)}
			}
		}
		if err := ap.apply(f); err != nil {
			return &Error{File: t.Reference, Err: err}
		}
	}
	return nil
}

func checkPatchName(name string) error {
	if strings.ContainsRune(name, 0) || path.IsAbs(name) || path.Clean(name) != name || name == "." || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("file name %q is not a clean path inside the repository", name)
	}
	return nil
}

// applier applies the file changes of one patch in order, each against the state
// left by the earlier ones. A nil entry in state is a deleted file.
type applier struct {
	repo  string
	state map[string]*[]byte
}

func (a *applier) read(name string) ([]byte, bool, error) {
	if b, ok := a.state[name]; ok {
		if b == nil {
			return nil, false, nil
		}
		return *b, true, nil
	}
	p := filepath.Join(a.repo, filepath.FromSlash(name))
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file in repo/", name)
	}
	b, err := readRegular(p, maxRepoFile)
	return b, err == nil, err
}

func (a *applier) apply(f *gitdiff.File) error {
	var src []byte
	if !f.IsNew {
		b, ok, err := a.read(f.OldName)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("changes %s, which repo/ does not have", f.OldName)
		}
		src = b
	} else if _, ok, err := a.read(f.NewName); err != nil || ok {
		if err != nil {
			return err
		}
		return fmt.Errorf("creates %s, which repo/ already has", f.NewName)
	}
	var dst bytes.Buffer
	if err := gitdiff.Apply(&dst, bytes.NewReader(src), f); err != nil {
		name := f.NewName
		if name == "" {
			name = f.OldName
		}
		return fmt.Errorf("does not apply to repo/%s: %w", name, err)
	}
	out := dst.Bytes()
	switch {
	case f.IsDelete:
		a.state[f.OldName] = nil
	case f.IsRename:
		a.state[f.OldName] = nil
		a.state[f.NewName] = &out
	default:
		a.state[f.NewName] = &out
	}
	return nil
}
