package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// file compares the non-directory p of both trees.
func (w *walker) file(p string, o, n *entry) error {
	for _, e := range []*entry{o, n} {
		if e != nil && !e.isRegular() && !e.isLink() {
			w.omit(p, "not a regular file or symlink")
			return nil
		}
	}
	if o != nil && n != nil && o.isRegular() && n.isRegular() && o.st.Size == n.st.Size && o.st.Size > w.opts.MaxFileBytes {
		return w.bigPair(p, o, n)
	}
	ov, err := w.read(p, o)
	if err != nil {
		return err
	}
	nv, err := w.read(p, n)
	if err != nil {
		return err
	}
	if (o != nil && ov == nil) || (n != nil && nv == nil) {
		w.omit(p, fmt.Sprintf("larger than %d bytes", w.opts.MaxFileBytes))
		return nil
	}
	switch {
	case ov == nil:
		return w.emit(p, nil, nv)
	case nv == nil:
		return w.emit(p, ov, nil)
	case ov.symlink != nv.symlink:
		if err := w.emit(p, ov, nil); err != nil {
			return err
		}
		return w.emit(p, nil, nv)
	case ov.mode() == nv.mode() && bytes.Equal(ov.data, nv.data):
		return nil
	}
	return w.emit(p, ov, nv)
}

// bigPair compares two files over the size limit that have the same size by
// streaming them: equal content with another executable bit is still a mode
// change the diff can carry.
func (w *walker) bigPair(p string, o, n *entry) error {
	same, err := w.sameContent(p, o, n)
	if err != nil {
		return err
	}
	ov, nv := &version{exec: o.st.Mode&0o100 != 0}, &version{exec: n.st.Mode&0o100 != 0}
	switch {
	case !same:
		w.omit(p, fmt.Sprintf("larger than %d bytes", w.opts.MaxFileBytes))
		return nil
	case ov.exec == nv.exec:
		return nil
	}
	return w.emit(p, ov, nv)
}

func (w *walker) sameContent(p string, o, n *entry) (bool, error) {
	of, err := w.openRegular(p, o)
	if err != nil {
		return false, err
	}
	defer of.Close()
	nf, err := w.openRegular(p, n)
	if err != nil {
		return false, err
	}
	defer nf.Close()
	a, b := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, ea := io.ReadFull(of, a)
		nb, eb := io.ReadFull(nf, b)
		if na != nb || !bytes.Equal(a[:na], b[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			for _, e := range []error{ea, eb} {
				if e != nil && !errors.Is(e, io.EOF) && !errors.Is(e, io.ErrUnexpectedEOF) {
					return false, fmt.Errorf("%s: %w", quote(p), e)
				}
			}
			return ea != nil && eb != nil, nil
		}
	}
}

// read returns e's content (nil e: nil), or nil if it is over the size limit.
func (w *walker) read(p string, e *entry) (*version, error) {
	if e == nil {
		return nil, nil
	}
	if e.isLink() {
		target, err := e.dir.readlink(e.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", quote(p), err)
		}
		return &version{symlink: true, data: []byte(target)}, nil
	}
	if e.st.Size > w.opts.MaxFileBytes {
		return nil, nil
	}
	if e.st.Size == 0 { // nothing to read (and the layers are at rest)
		return &version{exec: e.st.Mode&0o100 != 0}, nil
	}
	f, err := w.openRegular(p, e)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, w.opts.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", quote(p), err)
	}
	if int64(len(data)) > w.opts.MaxFileBytes {
		return nil, nil
	}
	return &version{exec: e.st.Mode&0o100 != 0, data: data}, nil
}

// openRegular opens a regular file entry, refusing metacopy files of the upper
// layer, whose data lives in a lower layer (never written by userxattr mounts).
func (w *walker) openRegular(p string, e *entry) (interface {
	io.Reader
	Close() error
}, error) {
	f, err := e.dir.openFile(e.name, &e.st)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", quote(p), err)
	}
	if e.upper {
		if _, ok := overlayXattr(int(f.Fd()), "metacopy"); ok {
			f.Close()
			return nil, fmt.Errorf("%s: %w: metacopy file", quote(p), ErrOverlay)
		}
	}
	return f, nil
}

// emit appends one file's diff, or ends the diff with a marker and a *LimitError
// if it would pass MaxTotalBytes.
func (w *walker) emit(p string, old, new *version) error {
	text, binary := fileDiff(p, old, new, w.opts.Binary)
	if int64(w.out.Len()+len(text)) > w.opts.MaxTotalBytes {
		fmt.Fprintf(&w.out, "# agentbox: diff truncated before %s: limit of %d bytes\n", quote(p), w.opts.MaxTotalBytes)
		w.sum.Truncated = true
		return &LimitError{What: "diff size", Limit: w.opts.MaxTotalBytes}
	}
	w.out.WriteString(text)
	switch {
	case old == nil:
		w.sum.Added++
	case new == nil:
		w.sum.Deleted++
	default:
		w.sum.Modified++
	}
	if binary {
		w.sum.Binary++
	}
	return nil
}

// omit records a change the diff cannot carry, with a marker line that git apply and
// ApplyPatch skip as garbage between files.
func (w *walker) omit(p, reason string) {
	w.sum.Omitted = append(w.sum.Omitted, Omission{Path: p, Reason: reason})
	fmt.Fprintf(&w.out, "# agentbox: omitted %s: %s\n", quote(p), reason)
}
