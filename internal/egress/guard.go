package egress

import (
	"bytes"
	"io"
)

// guard reads through a stream and fails, before passing on its last byte, on any
// of the secrets' placeholders: it holds back the longest placeholder's length less
// one, so a placeholder split across reads is seen whole and never fully sent.
type guard struct {
	r       io.Reader
	secrets []secretRule
	hold    int
	buf     []byte // read, not yet passed on
	scratch []byte
	err     error // the stream's
	found   *placeholderError
}

func newGuard(r io.Reader, secrets []secretRule) *guard {
	g := &guard{r: r, secrets: secrets}
	for _, s := range secrets {
		g.hold = max(g.hold, len(s.placeholder)-1)
	}
	return g
}

func (g *guard) Read(p []byte) (int, error) {
	for {
		if g.found == nil {
			for _, s := range g.secrets {
				if bytes.Contains(g.buf, []byte(s.placeholder)) {
					g.found, g.buf = &placeholderError{name: s.name}, nil
					break
				}
			}
		}
		if g.found != nil {
			return 0, g.found
		}
		ready := len(g.buf) - g.hold
		if g.err != nil {
			ready = len(g.buf) // the stream ended: nothing can complete a placeholder
		}
		if ready > 0 {
			n := copy(p, g.buf[:ready])
			g.buf = g.buf[n:]
			return n, nil
		}
		if g.err != nil {
			return 0, g.err
		}
		if g.scratch == nil {
			g.scratch = make([]byte, 32<<10)
		}
		n, err := g.r.Read(g.scratch)
		g.buf = append(g.buf, g.scratch[:n]...)
		g.err = err
	}
}

type guardBody struct {
	*guard
	c io.Closer
}

func (b *guardBody) Close() error { return b.c.Close() }
