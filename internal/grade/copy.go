package grade

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
)

// copyHidden places every hidden file of t at its path in the environment's
// repository, replacing (never following) whatever the patch left there.
func copyHidden(ctx context.Context, svc env.Service, owner env.Owner, id string, t *task.Task) error {
	for _, rel := range t.HiddenFiles {
		if err := svc.Remove(ctx, owner, id, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clear %s: %w", rel, err)
		}
	}
	return upload(ctx, svc, owner, id, ".", t.Hidden, t.HiddenFiles)
}

// upload streams the named files (relative to dir, slash-separated; regular files
// and symlinks) as one tar into the environment directory dst.
func upload(ctx context.Context, svc env.Service, owner env.Owner, id, dst, dir string, names []string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, dir, names)) }()
	err := svc.Upload(ctx, owner, id, dst, pr)
	pr.CloseWithError(errors.New("upload ended"))
	if err != nil {
		return fmt.Errorf("upload to %s: %w", dst, err)
	}
	return nil
}

func writeTar(w io.Writer, dir string, names []string) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	for _, name := range names {
		// Parent directories first: the extractor need not invent them.
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, name := range sortedDirs(dirs) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := addFile(tw, filepath.Join(dir, filepath.FromSlash(name)), name); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, src, name string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777})
	case fi.Mode().IsRegular():
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: fi.Size(), Mode: 0o644}); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	}
	return fmt.Errorf("%s: not a regular file or symlink", name)
}

// cacheFiles lists the regular files of a Go cache directory, slash-separated and
// relative, without WarmGoCache's stamp.
func cacheFiles(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			if rel != warmStamp {
				names = append(names, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return names, err
}

// sortedDirs returns the directories shallowest first, so parents precede children.
func sortedDirs(dirs map[string]bool) []string {
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b string) int {
		if c := strings.Count(a, "/") - strings.Count(b, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}
