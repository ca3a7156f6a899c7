package terminal

import (
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// maxSGR is the longest SGR sequence passed through, ESC and final "m" included;
// longer ones are shown escaped. Real colour sequences stay far below it
// ("\e[38;2;255;255;255;48;2;0;0;0m" is 31 bytes).
const maxSGR = 64

// reset ends every SGR attribute.
const reset = "\x1b[0m"

// Writer renders a stream for a terminal: printable UTF-8 text, \n, \t, \r and SGR
// sequences (ESC [ digits and semicolons m) pass unchanged; ESC is written as \e;
// BEL, BS, VT and FF as \a, \b, \v and \f; other C0 controls, DEL and bytes that are
// not UTF-8 as \xNN; C1 controls (U+0080 to U+009F) as \u00NN. What follows an
// escaped ESC is written as the text it is.
//
// It is a streaming filter: a sequence or a UTF-8 character split across writes is
// judged as a whole, so at most a few bytes wait for the next Write or for Flush.
// It is safe for concurrent use.
type Writer struct {
	mu       sync.Mutex
	w        io.Writer
	pending  []byte // the start of a sequence or character not yet decided
	out      []byte
	coloured bool // an SGR other than a reset was passed since the last reset
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write filters p to the terminal. It reports len(p) unless the terminal's write
// fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := p
	if len(w.pending) > 0 {
		in = append(w.pending, p...) // pending is short: a partial sequence or character
		w.pending = nil
	}
	rest := w.filter(in, false)
	w.pending = append([]byte(nil), rest...)
	if err := w.flushOut(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what waits for the rest of a sequence or character, escaped, and a
// reset if the stream left a colour on. Call it when the stream ends, before other
// text shares the terminal.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.filter(w.pending, true)
	w.pending = nil
	if w.coloured {
		w.out = append(w.out, reset...)
		w.coloured = false
	}
	return w.flushOut()
}

func (w *Writer) flushOut() error {
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.w.Write(w.out)
	w.out = w.out[:0]
	return err
}

// filter appends the rendering of in to w.out and returns the tail of in that cannot
// be judged without the bytes that follow (nothing when final is set).
func (w *Writer) filter(in []byte, final bool) (rest []byte) {
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case plain(c):
			j := i + 1
			for j < len(in) && plain(in[j]) {
				j++
			}
			w.out = append(w.out, in[i:j]...)
			i = j
		case c == 0x1b:
			n, undecided := sgrLen(in[i:])
			switch {
			case n > 0:
				seq := string(in[i : i+n])
				w.coloured = seq != "\x1b[m" && seq != reset
				w.out = append(w.out, seq...)
				i += n
			case undecided && !final:
				return in[i:]
			default:
				w.out = append(w.out, `\e`...)
				i++
			}
		case c < utf8.RuneSelf: // C0 or DEL
			w.out = appendControl(w.out, c)
			i++
		default:
			if !final && !utf8.FullRune(in[i:]) {
				return in[i:]
			}
			r, n := utf8.DecodeRune(in[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				w.out = fmt.Appendf(w.out, `\x%02X`, c)
			case r < 0xa0: // C1: U+0080 to U+009F
				w.out = fmt.Appendf(w.out, `\u%04X`, r)
			default:
				w.out = append(w.out, in[i:i+n]...)
			}
			i += n
		}
	}
	return nil
}

// plain reports whether c is printable ASCII or one of the kept controls \n \t \r.
func plain(c byte) bool {
	return c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c == '\r'
}

// sgrLen returns the length of the SGR sequence that b (starting with ESC) begins
// with, or 0; undecided means b is too short to tell.
func sgrLen(b []byte) (n int, undecided bool) {
	for i := 1; i < len(b) && i < maxSGR; i++ {
		switch c := b[i]; {
		case i == 1:
			if c != '[' {
				return 0, false
			}
		case c == 'm':
			return i + 1, false
		case c < '0' || c > '9' && c != ';':
			return 0, false
		}
	}
	return 0, len(b) < maxSGR
}

func appendControl(out []byte, c byte) []byte {
	switch c {
	case 0x07:
		return append(out, `\a`...)
	case 0x08:
		return append(out, `\b`...)
	case 0x0b:
		return append(out, `\v`...)
	case 0x0c:
		return append(out, `\f`...)
	}
	return fmt.Appendf(out, `\x%02X`, c)
}
