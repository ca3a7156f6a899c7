package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// readMerged reads file rel (a cleaned relative path) as the overlay of layers
// (bottom first) shows it: the topmost layer that has it wins, a whiteout or an
// opaque directory above hides what is below. It follows no symlink: a path
// reached through one is an error, since only the sandbox's kernel may resolve
// an image's links. os.ErrNotExist if the image has no such file.
func readMerged(layers []string, rel string, max int64) ([]byte, error) {
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
			return nil, false, false, fmt.Errorf("/%s is a symbolic link, not followed", strings.Join(comps[:k+1], "/"))
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
