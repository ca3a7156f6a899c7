package workspace

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// TarTo writes rel as a tar stream to w. For a directory the entry names are
// relative to it ("a.go", "sub/", "sub/b.go"); for a file or symlink the one entry is
// named by its base name. Symlinks are archived as links (their target text), never
// followed; fifos, sockets and devices are skipped; directories are descended one
// descriptor at a time, each verified to be the directory that was listed. Entry
// count, total size and depth are capped (Options.MaxEntries, MaxTotalBytes,
// maxDepth); hardlinked files follow Options.AllowHardlinks. Uid, gid and user names
// are not recorded.
func (r *Root) TarTo(w io.Writer, rel string) error {
	p, err := cleanAny("tar", rel)
	if err != nil {
		return err
	}
	t := &tarWriter{r: r, tw: tar.NewWriter(w)}
	fi, err := r.root.Lstat(p)
	if err != nil {
		return pathErr("tar", p, err)
	}
	dir, name := p, "."
	if !fi.IsDir() {
		dir, name = path.Dir(p), path.Base(p)
	}
	d, err := r.root.OpenRoot(dir)
	if err != nil {
		return pathErr("tar", p, err)
	}
	defer d.Close()
	if fi.IsDir() {
		err = t.dir(d, p, "", 0)
	} else {
		err = t.entry(d, p, name, name, fi, 0)
	}
	if err != nil {
		return err
	}
	return t.tw.Close()
}

type tarWriter struct {
	r       *Root
	tw      *tar.Writer
	entries int
	bytes   int64
}

// dir archives the contents of d (the directory at workspace path p) under prefix.
func (t *tarWriter) dir(d *os.Root, p, prefix string, depth int) error {
	if depth >= maxDepth {
		return &LimitError{What: "directory depth", Limit: maxDepth}
	}
	f, err := d.Open(".")
	if err != nil {
		return pathErr("tar", p, err)
	}
	ents, err := f.ReadDir(-1) // a Root's ReadDir lstats by descriptor
	f.Close()
	if err != nil {
		return pathErr("tar", p, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, de := range ents {
		fi, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return pathErr("tar", p, err)
		}
		if err := t.entry(d, path.Join(p, de.Name()), de.Name(), prefix+de.Name(), fi, depth); err != nil {
			return err
		}
	}
	return nil
}

// entry archives the entry name of d, which lstat described as fi, as the tar
// entry arc; p is its workspace path for errors.
func (t *tarWriter) entry(d *os.Root, p, name, arc string, fi fs.FileInfo, depth int) error {
	if t.entries++; t.entries > t.r.opts.MaxEntries {
		return &LimitError{What: "archive entries", Limit: int64(t.r.opts.MaxEntries)}
	}
	h := &tar.Header{Name: arc, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := d.Readlink(name)
		if err != nil {
			return pathErr("tar", p, err)
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
		return t.tw.WriteHeader(h)
	case fi.IsDir():
		sub, err := d.OpenRoot(name)
		if err != nil {
			return pathErr("tar", p, err)
		}
		defer sub.Close()
		if sfi, err := sub.Stat("."); err != nil || !os.SameFile(fi, sfi) {
			return pathErr("tar", p, ErrChanged)
		}
		h.Typeflag, h.Name = tar.TypeDir, arc+"/"
		if err := t.tw.WriteHeader(h); err != nil {
			return err
		}
		return t.dir(sub, p, arc+"/", depth+1)
	case fi.Mode().IsRegular():
		return t.file(d, p, name, h, fi)
	}
	return nil // fifo, socket, device: not archived
}

func (t *tarWriter) file(d *os.Root, p, name string, h *tar.Header, lfi fs.FileInfo) error {
	f, fi, err := t.r.openRead(d, name)
	if err != nil {
		return pathErr("tar", p, err)
	}
	defer f.Close()
	if !os.SameFile(lfi, fi) {
		return pathErr("tar", p, ErrChanged)
	}
	if t.bytes += fi.Size(); t.bytes > t.r.opts.MaxTotalBytes {
		return &LimitError{What: "archive size", Limit: t.r.opts.MaxTotalBytes}
	}
	h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	if err := t.tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.CopyN(t.tw, f, fi.Size()); err != nil {
		if errors.Is(err, io.EOF) { // shrank since the fstat
			err = ErrChanged
		}
		return pathErr("tar", p, err)
	}
	return nil
}
