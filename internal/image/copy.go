package image

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"
)

// copyTar walks c.Src in dir (never leaving it: os.Root) and, if w is not nil,
// writes it as a layer archive with everything under c.Dst, owned by root. It
// returns the digest of what it read (names, types, permissions, contents, link
// targets): the step's inputs, which its cache key includes. Symlinks are copied
// as links; other special files are refused.
func copyTar(ctx context.Context, dir string, c *Copy, w io.Writer) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", c.Src, err)
	}
	defer root.Close()
	src, err := cleanName(c.Src)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", c.Src, err)
	}
	dst, _ := cleanName(c.Dst)
	cw := &copyWalk{ctx: ctx, root: root, h: sha256.New()}
	if w != nil {
		cw.tw = tar.NewWriter(w)
	}
	if err := cw.walk(src, dst); err != nil {
		return "", fmt.Errorf("copy %s: %w", c.Src, err)
	}
	if cw.tw != nil {
		if err := cw.tw.Close(); err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(cw.h.Sum(nil)), nil
}

type copyWalk struct {
	ctx  context.Context
	root *os.Root
	h    hash.Hash
	tw   *tar.Writer
}

// walk copies src (relative to the root) to name in the archive.
func (cw *copyWalk) walk(src, name string) error {
	if err := cw.ctx.Err(); err != nil {
		return err
	}
	fi, err := cw.root.Lstat(src)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX}
	switch {
	case fi.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		fmt.Fprintf(cw.h, "d %q %o\n", name, fi.Mode().Perm())
		if err := cw.header(hdr, nil); err != nil {
			return err
		}
		d, err := cw.root.Open(src)
		if err != nil {
			return err
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return err
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			if err := cw.walk(path.Join(src, e.Name()), path.Join(name, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := cw.root.Readlink(src)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
		fmt.Fprintf(cw.h, "l %q %q\n", name, target)
		return cw.header(hdr, nil)
	case fi.Mode().IsRegular():
		f, err := cw.root.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		content := sha256.New()
		var body io.Reader = io.TeeReader(io.LimitReader(f, fi.Size()), content)
		if err := cw.header(hdr, body); err != nil {
			return err
		}
		if cw.tw == nil {
			if _, err := io.Copy(io.Discard, body); err != nil {
				return err
			}
		}
		fmt.Fprintf(cw.h, "f %q %o %d %x\n", name, fi.Mode().Perm(), fi.Size(), content.Sum(nil))
		return nil
	}
	return fmt.Errorf("%s is not a file, directory or symbolic link", src)
}

// header writes hdr and body to the archive, if there is one.
func (cw *copyWalk) header(hdr *tar.Header, body io.Reader) error {
	if cw.tw == nil {
		return nil
	}
	if err := cw.tw.WriteHeader(hdr); err != nil {
		return err
	}
	if body != nil {
		n, err := io.Copy(cw.tw, body)
		if err == nil && n != hdr.Size {
			err = fmt.Errorf("%s changed size while it was copied", hdr.Name)
		}
		return err
	}
	return nil
}
