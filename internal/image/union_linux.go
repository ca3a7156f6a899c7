package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// readMerged reads file rel (a cleaned relative path) as the overlay of layers
// (bottom first) shows it: the topmost layer that has it wins, a whiteout or an
// opaque directory above hides what is below. A symbolic link on the way is
// resolved in the merged tree as the sandbox would see it (an absolute target
// from the image's root, ".." stopping there), never on the host; each layer's
// own walk is openat2(RESOLVE_BENEATH) and follows nothing. os.ErrNotExist if
// the image has no such file.
func readMerged(layers []string, rel string, max int64) ([]byte, error) {
	orig := rel
	for hops := 0; hops <= maxLinks; hops++ {
		b, err := readMergedOnce(layers, rel, max)
		var link *linkError
		if !errors.As(err, &link) {
			return b, err
		}
		// A symbolic link on the way (an image whose /etc is a link) resolves
		// in the merged tree, an absolute target from the image's root: the
		// host's files are never read.
		dir := path.Dir(link.at)
		if path.IsAbs(link.target) {
			dir = "/"
		}
		rel = strings.TrimPrefix(path.Join("/", dir, link.target, link.rest), "/")
		if rel == "" {
			return nil, fmt.Errorf("/%s: resolves to the root directory", orig)
		}
	}
	return nil, fmt.Errorf("/%s: more than %d symbolic links", orig, maxLinks)
}

// maxLinks bounds the links readMerged follows, as the kernel's 40.
const maxLinks = 40

// linkError says that the path met a symbolic link at at ("etc"), whose
// target is target, with rest of the path after it.
type linkError struct{ at, target, rest string }

func (e *linkError) Error() string { return "/" + e.at + " is a symbolic link" }

func readMergedOnce(layers []string, rel string, max int64) ([]byte, error) {
	comps := strings.Split(rel, "/")
	for i := len(layers) - 1; i >= 0; i-- {
		b, found, hidden, err := readInLayer(layers[i], comps, max)
		if err != nil || found {
			return b, err
		}
		if hidden {
			break
		}
	}
	return nil, fmt.Errorf("/%s: %w", rel, os.ErrNotExist)
}

// readInLayer looks for comps in one layer. hidden: the layers below cannot
// provide it (a whiteout, a non-directory or an opaque directory on the way).
func readInLayer(layer string, comps []string, max int64) (b []byte, found, hidden bool, err error) {
	cur, err := unix.Open(layer, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, false, err
	}
	defer func() { unix.Close(cur) }()
	opaque := false
	for k, c := range comps {
		var st unix.Stat_t
		if err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil, false, opaque, nil
			}
			return nil, false, false, err
		}
		last := k == len(comps)-1
		switch t := st.Mode & unix.S_IFMT; {
		case t == unix.S_IFCHR && st.Rdev == 0:
			return nil, false, true, nil // whiteout
		case t == unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(cur, c, buf)
			if err != nil {
				return nil, false, false, err
			}
			return nil, false, false, &linkError{at: strings.Join(comps[:k+1], "/"), target: string(buf[:n]), rest: strings.Join(comps[k+1:], "/")}
		case last && t == unix.S_IFREG:
			fd, err := openBeneath(cur, c, unix.O_RDONLY)
			if err != nil {
				return nil, false, false, err
			}
			f := os.NewFile(uintptr(fd), c)
			defer f.Close()
			b, err := io.ReadAll(io.LimitReader(f, max+1))
			if err == nil && int64(len(b)) > max {
				err = fmt.Errorf("/%s is larger than %d bytes", strings.Join(comps, "/"), max)
			}
			return b, err == nil, false, err
		case last || t != unix.S_IFDIR:
			return nil, false, true, nil // not a regular file, or a non-directory on the way
		}
		next, err := openBeneath(cur, c, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return nil, false, false, err
		}
		unix.Close(cur)
		cur = next
		var v [1]byte
		if n, err := unix.Fgetxattr(cur, xattrOpaque, v[:]); err == nil && n == 1 && v[0] == 'y' {
			opaque = true
		}
	}
	return nil, false, opaque, nil
}
