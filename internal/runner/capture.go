package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// capture keeps the head and the tail of one output stream in at most limit bytes,
// however much the child writes, and counts every byte.
type capture struct {
	mu    sync.Mutex
	limit int64
	head  []byte
	tail  []byte // ring buffer of cap limit-limit/2 once head is full
	pos   int    // next write position in tail when it is full
	full  bool   // tail has wrapped at least once
	total int64
}

func newCapture(limit int64) *capture { return &capture{limit: limit} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	headCap := int(c.limit / 2)
	if room := headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailCap := int(c.limit) - headCap
	if tailCap == 0 || len(p) == 0 {
		return n, nil
	}
	if len(p) >= tailCap {
		c.tail = append(c.tail[:0], p[len(p)-tailCap:]...)
		c.pos, c.full = 0, true
		return n, nil
	}
	if !c.full {
		if room := tailCap - len(c.tail); len(p) <= room {
			c.tail = append(c.tail, p...)
			if len(c.tail) == tailCap {
				c.full, c.pos = true, 0
			}
			return n, nil
		} else {
			c.tail = append(c.tail, p[:room]...)
			p = p[room:]
			c.full, c.pos = true, 0
		}
	}
	for len(p) > 0 {
		k := copy(c.tail[c.pos:], p)
		p = p[k:]
		c.pos = (c.pos + k) % tailCap
	}
	return n, nil
}

// result renders the captured text as valid UTF-8: bytes that are not UTF-8 are escaped
// as \xNN, and when bytes were dropped a marker between head and tail says how many.
// It reports whether anything was dropped and the total byte count.
func (c *capture) result() (text string, truncated bool, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if c.full {
		tail = append(append([]byte{}, c.tail[c.pos:]...), c.tail[:c.pos]...)
	}
	kept := int64(len(c.head) + len(tail))
	if kept == c.total {
		return escapeUTF8(append(append([]byte{}, c.head...), tail...)), false, c.total
	}
	// Do not split a character at either cut: those bytes join the dropped count.
	head := trimIncompleteRuneEnd(c.head)
	tail = trimRuneContinuationStart(tail)
	dropped := c.total - int64(len(head)+len(tail))
	var b strings.Builder
	b.WriteString(escapeUTF8(head))
	fmt.Fprintf(&b, "\n[agentbox: %d bytes dropped]\n", dropped)
	b.WriteString(escapeUTF8(tail))
	return b.String(), true, c.total
}

// trimIncompleteRuneEnd drops a multi-byte character cut off at the end of b.
func trimIncompleteRuneEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing cut
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-i:]) {
				return b
			}
			return b[:len(b)-i]
		}
	}
	return b
}

// trimRuneContinuationStart drops the continuation bytes of a character whose start was
// cut off at the beginning of b.
func trimRuneContinuationStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// escapeUTF8 returns b as a string in which every byte that is not part of a valid UTF-8
// sequence appears as the four characters \xNN.
func escapeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	s.Grow(len(b) + 16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&s, `\x%02X`, b[0])
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return s.String()
}

// pump copies a child's stream into its capture, the live writer and the file, counting
// against the shared hard total; it calls over once when the total is exceeded and keeps
// draining so the child never blocks on a full pipe before it is killed.
func pump(r io.Reader, c *capture, live io.Writer, file io.Writer, budget *outputBudget) {
	bp := pumpBuffers.Get().(*[]byte)
	defer pumpBuffers.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p := buf[:n]
			allowed := budget.take(int64(n))
			c.Write(p)
			if allowed > 0 {
				if live != nil {
					live.Write(p[:allowed]) // a slow or closed consumer must not stop the drain
				}
				if file != nil {
					file.Write(p[:allowed])
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// pumpBuffers are pump's read buffers: two per command, which a daemon running
// many short commands would otherwise allocate (and collect) for each one, 90%
// of the bytes it allocates per exec.
var pumpBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// outputBudget is the hard total shared by stdout and stderr.
type outputBudget struct {
	mu     sync.Mutex
	left   int64
	once   sync.Once
	onOver func()
}

// take consumes n bytes and returns how many may still be forwarded live or to files.
func (b *outputBudget) take(n int64) int64 {
	b.mu.Lock()
	allowed := min(n, max(b.left, 0))
	b.left -= n
	over := b.left < 0
	b.mu.Unlock()
	if over {
		b.once.Do(b.onOver)
	}
	return allowed
}
