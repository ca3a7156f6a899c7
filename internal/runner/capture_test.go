package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// Whatever the chunking, the capture keeps exactly the first limit/2 and the last
// limit-limit/2 bytes (less split characters), counts every byte, and renders valid UTF-8.
func TestCaptureProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.Int64Range(0, 64).Draw(t, "limit")
		alphabet := []string{"a", "b", "\n", "é", "€", "𝄞", "\xff", "\x80"}
		pieces := rapid.SliceOf(rapid.SampledFrom(alphabet)).Draw(t, "pieces")
		all := []byte(strings.Join(pieces, ""))
		c := newCapture(limit)
		for rest := all; len(rest) > 0; {
			n := rapid.IntRange(1, len(rest)).Draw(t, "chunk")
			c.Write(rest[:n])
			rest = rest[n:]
		}
		text, truncated, total := c.result()
		if total != int64(len(all)) {
			t.Fatalf("total %d, want %d", total, len(all))
		}
		if !utf8.ValidString(text) {
			t.Fatalf("invalid UTF-8: %q", text)
		}
		if int64(len(all)) <= limit {
			if truncated || text != escapeUTF8(all) {
				t.Fatalf("short output changed: %q -> %q (truncated %v)", all, text, truncated)
			}
			return
		}
		if !truncated {
			t.Fatalf("%d bytes over limit %d not marked truncated", len(all), limit)
		}
		head := trimIncompleteRuneEnd(all[:limit/2])
		tail := trimRuneContinuationStart(all[int64(len(all))-(limit-limit/2):])
		want := fmt.Sprintf("%s\n[agentbox: %d bytes dropped]\n%s", escapeUTF8(head), len(all)-len(head)-len(tail), escapeUTF8(tail))
		if text != want {
			t.Fatalf("got %q\nwant %q", text, want)
		}
	})
}

func TestEscapeUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"a\xffb":       `a\xFFb`,
		"\xe2\x82":     `\xE2\x82`,
		"é\x00":        "é\x00",
		"\xed\xa0\x80": `\xED\xA0\x80`, // a UTF-16 surrogate is not valid UTF-8
	} {
		if got := escapeUTF8([]byte(in)); got != want {
			t.Errorf("escapeUTF8(%q) = %q, want %q", in, got, want)
		}
	}
	if !bytes.Equal(trimIncompleteRuneEnd([]byte("ab\xe2\x82")), []byte("ab")) {
		t.Error("incomplete rune at the end kept")
	}
}
