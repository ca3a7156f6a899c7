package workspace

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// TarFiles writes the named host files (relative to dir, slash-separated; regular
// files and symlinks, never followed) to w as one tar archive, parent directories
// first, with modes 0644 and 0755: what UntarFrom unpacks into a workspace. The
// files are the caller's own (a task's hidden tests, a build cache), not a
// workspace's: they are read with the host's path resolution.
func TarFiles(w io.Writer, dir string, names []string) error {
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
