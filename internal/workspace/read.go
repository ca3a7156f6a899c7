package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// ReadFile returns up to length bytes of the regular file rel from offset (length 0:
// to the end). It follows symlinks that stay inside the workspace. If the bytes to
// return exceed Options.MaxReadBytes it returns a *TooLargeError carrying the
// file's size, so the caller can ask for a range instead. Fifos, devices and sockets
// are refused with ErrNotRegular without blocking; files with several hard links
// with ErrHardlink unless Options.AllowHardlinks.
func (r *Root) ReadFile(rel string, offset, length int64) ([]byte, error) {
	p, err := cleanEntry("read", rel)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length < 0 {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrInvalid}
	}
	f, fi, err := r.openRead(r.root, p)
	if err != nil {
		return nil, pathErr("read", p, err)
	}
	defer f.Close()
	n := max(fi.Size()-offset, 0)
	if length > 0 {
		n = min(n, length)
	}
	if n > r.opts.MaxReadBytes {
		return nil, &TooLargeError{Path: p, Size: fi.Size(), Limit: r.opts.MaxReadBytes}
	}
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) { // a file that shrank returns what is left
		return nil, pathErr("read", p, err)
	}
	return buf[:m], nil
}

// Open opens the regular file rel for reading under the same rules as ReadFile
// (in-workspace symlinks followed; fifos, devices and sockets refused without
// blocking; hardlinked files refused unless Options.AllowHardlinks) but with no
// size cap, for callers that stream a file (an export). It returns the file and
// its fstat; the caller closes the file. The file's Name is a host path: errors
// of later reads must not be shown to a remote caller as they are.
func (r *Root) Open(rel string) (*os.File, fs.FileInfo, error) {
	p, err := cleanEntry("open", rel)
	if err != nil {
		return nil, nil, err
	}
	f, fi, err := r.openRead(r.root, p)
	if err != nil {
		return nil, nil, pathErr("open", p, err)
	}
	return f, fi, nil
}

// openRead opens name in d for reading, following in-root symlinks, and returns it
// only if what was opened is a regular file the options allow reading.
func (r *Root) openRead(d *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := d.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = r.readable(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readable applies the rules every read shares to the fstat of an open file.
func (r *Root) readable(fi fs.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return ErrNotRegular
	case !r.opts.AllowHardlinks && linkCount(fi) > 1:
		return ErrHardlink
	}
	return nil
}

// loadEntry reads the regular file name in d for editing: unlike openRead it does
// not follow a symlink (ErrSymlink), it checks that the file opened is the entry it
// looked at (ErrChanged), and it caps the size at Options.MaxFileBytes.
func (r *Root) loadEntry(d *os.Root, name, p string) ([]byte, fs.FileInfo, error) {
	lfi, err := d.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case lfi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, ErrSymlink
	case !lfi.Mode().IsRegular():
		return nil, nil, ErrNotRegular
	}
	f, fi, err := r.openRead(d, name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if !os.SameFile(lfi, fi) {
		return nil, nil, ErrChanged
	}
	if fi.Size() > r.opts.MaxFileBytes {
		return nil, nil, &TooLargeError{Path: p, Size: fi.Size(), Limit: r.opts.MaxFileBytes}
	}
	data, err := io.ReadAll(io.LimitReader(f, r.opts.MaxFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > r.opts.MaxFileBytes {
		return nil, nil, &TooLargeError{Path: p, Size: int64(len(data)), Limit: r.opts.MaxFileBytes}
	}
	return data, fi, nil
}
