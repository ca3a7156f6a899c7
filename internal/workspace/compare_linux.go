package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"unicode/utf8"
)

// file compares the non-directory p of both trees.
func (w *walker) file(p string, o, n *entry) error {
	for _, e := range []*entry{o, n} {
		if e != nil && !e.isRegular() && !e.isLink() {
			return w.omit(p, "not a regular file or symlink")
		}
	}
	if o != nil && n != nil && o.isRegular() && n.isRegular() && o.st.Size == n.st.Size && o.st.Size > w.opts.MaxFileBytes {
		return w.bigPair(p, o, n)
	}
	ov, err := w.read(p, o)
	if err == nil {
		var nv *version
		if nv, err = w.read(p, n); err == nil {
			return w.pair(p, o, n, ov, nv)
		}
	}
	if unreadable(err) {
		return w.omit(p, unreadableReason)
	}
	return err
}

// pair emits the change from ov to nv, the contents of o and n (nil where over the
// size limit).
func (w *walker) pair(p string, o, n *entry, ov, nv *version) error {
	if (o != nil && ov == nil) || (n != nil && nv == nil) {
		return w.omit(p, fmt.Sprintf("larger than %d bytes", w.opts.MaxFileBytes))
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
	if unreadable(err) {
		return w.omit(p, unreadableReason)
	}
	if err != nil {
		return err
	}
	ov, nv := &version{exec: o.st.Mode&0o100 != 0}, &version{exec: n.st.Mode&0o100 != 0}
	switch {
	case !same:
		return w.omit(p, fmt.Sprintf("larger than %d bytes", w.opts.MaxFileBytes))
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

// emit appends one file's diff, or ends the diff (errTruncated) if it would pass
// MaxTotalBytes.
func (w *walker) emit(p string, old, new *version) error {
	text, binary := fileDiff(p, old, new, w.opts.Binary)
	if err := w.room(p, len(text)); err != nil {
		return err
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
// ApplyPatch skip as garbage between files. The line counts against MaxTotalBytes
// like a file's diff.
func (w *walker) omit(p, reason string) error {
	line := fmt.Sprintf("# agentbox: omitted %s: %s\n", quote(p), reason)
	if err := w.room(p, len(line)); err != nil {
		return err
	}
	w.sum.Omitted = append(w.sum.Omitted, Omission{Path: p, Reason: reason})
	w.out.WriteString(line)
	return nil
}

// room ends the diff (errTruncated) if n more bytes for path p would pass
// MaxTotalBytes.
func (w *walker) room(p string, n int) error {
	if int64(w.out.Len()+n) <= w.opts.MaxTotalBytes {
		return nil
	}
	return w.truncate(p, fmt.Sprintf("limit of %d bytes", w.opts.MaxTotalBytes))
}

// errTruncated ends a walk early once the diff is cut; Diff returns what it has.
var errTruncated = errors.New("diff truncated")

// truncate ends the diff at path p with a marker line saying why. The marker may pass
// MaxTotalBytes by its own length (p is cut to keep it short).
func (w *walker) truncate(p, why string) error {
	if p == "" {
		p = "."
	}
	fmt.Fprintf(&w.out, "%s%s: %s\n", truncatedMarker, quote(shortPath(p)), why)
	w.sum.Truncated = true
	return errTruncated
}

// shortPath cuts p to its first 256 bytes (at a character boundary) for a marker.
func shortPath(p string) string {
	if len(p) <= 256 {
		return p
	}
	cut := 256
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return p[:cut] + "..."
}

// unreadableReason is the reason an unreadable entry is omitted for.
const unreadableReason = "unreadable (permission denied)"

// unreadable reports an entry the sandbox made unreadable to agentbox (mode 000 and
// the like, when agentbox is not root): it costs the diff that entry, nothing more.
func unreadable(err error) bool { return errors.Is(err, fs.ErrPermission) }
