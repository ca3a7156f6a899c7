package terminal

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// render writes each chunk with its own Write, then flushes.
func render(t testing.TB, chunks ...string) string {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	for _, c := range chunks {
		if n, err := w.Write([]byte(c)); n != len(c) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"text", []string{"héllo\tworld\r\n"}, "héllo\tworld\r\n"},
		// The attack: clipboard, title, and a query the terminal answers into
		// the shell's input.
		{"osc 52 and queries", []string{"\x1b]52;c;aGk=\a\x1b]0;title\a\x1b[6n\x1b[c"}, `\e]52;c;aGk=\a\e]0;title\a\e[6n\e[c`},
		{"sgr kept", []string{"\x1b[31mred\x1b[0m \x1b[1;38;5;196mbold\x1b[m"}, "\x1b[31mred\x1b[0m \x1b[1;38;5;196mbold\x1b[m"},
		{"colour left on is reset", []string{"\x1b[31mred"}, "\x1b[31mred\x1b[0m"},
		{"not sgr", []string{"\x1b[2J\x1b[?1049h\x1b[31;1H\x1bP+q\x1b\\"}, `\e[2J\e[?1049h\e[31;1H\eP+q\e\`},
		{"sgr with colon", []string{"\x1b[38:2:1:2:3m"}, `\e[38:2:1:2:3m`},
		{"long sgr", []string{"\x1b[" + strings.Repeat("1;", 40) + "m"}, `\e[` + strings.Repeat("1;", 40) + "m"},
		{"esc split", []string{"a\x1b", "]52;c;x\a"}, `a\e]52;c;x\a`},
		{"csi split", []string{"\x1b[", "6", "n"}, `\e[6n`},
		{"sgr split", []string{"\x1b[3", "1m", "r\x1b[0", "m"}, "\x1b[31mr\x1b[0m"},
		{"esc at end", []string{"x\x1b"}, `x\e`},
		{"sgr prefix at end", []string{"x\x1b[31"}, `x\e[31`},
		{"c0", []string{"\x00\x01\b\v\f\x7f\x1c"}, `\x00\x01\b\v\f\x7F\x1C`},
		{"c1 utf-8", []string{"\u009b6n\u0085\u009d0;t\u009c"}, `\u009B6n\u0085\u009D0;t\u009C`},
		{"c1 utf-8 split", []string{"a\xc2", "\x9b6n"}, `a\u009B6n`},
		{"c1 8-bit", []string{"\x9b6n\x9d0;t\x07"}, `\x9B6n\x9D0;t\a`},
		{"invalid utf-8", []string{"\xff\xc2 \xe2\x82"}, `\xFF\xC2 \xE2\x82`},
		{"rune split", []string{"\xe2", "\x82", "\xac!"}, "€!"},
		{"nbsp and beyond", []string{"\u00a0\u00ff\u2028"}, "\u00a0\u00ff\u2028"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(t, tc.chunks...); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A partial sequence waits in the Writer; nothing of it reaches the terminal before
// the sequence is decided, so ESC never leaves alone.
func TestWriterHoldsPartialSequence(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Write([]byte("ab\x1b[1"))
	if b.String() != "ab" {
		t.Fatalf("wrote %q before the sequence was complete", b.String())
	}
	w.Write([]byte(";2x"))
	if b.String() != `ab\e[1;2x` {
		t.Fatalf("got %q", b.String())
	}
}

var keptSGR = regexp.MustCompile("\x1b\\[[0-9;]*m")

// checkSafe fails if out holds anything a terminal would act on besides SGR, \n, \t
// and \r, or bytes that are not UTF-8.
func checkSafe(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output of %q is not UTF-8: %q", in, out)
	}
	for _, r := range keptSGR.ReplaceAllString(out, "") {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			t.Fatalf("output of %q holds control %U: %q", in, r, out)
		}
	}
}

func FuzzWriter(f *testing.F) {
	for _, s := range []string{
		"\x1b]52;c;aGk=\a\x1b[6n", "\x1b[31mx\x1b[0m", "\xc2\x9b1m", "\x9b", "\x1b\x1b[m", "\x1b[" + strings.Repeat("9", 70) + "m",
		"plain text\r\n", "\xe2\x82\xac\xf0\x9f", "\x1b[;m\x1b[1;2;3m",
	} {
		f.Add(s, uint8(1), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in string, cut1, cut2 uint8) {
		whole := render(t, in)
		checkSafe(t, in, whole)
		// The same bytes in other writes give the same rendering.
		a := min(int(cut1), len(in))
		b := min(a+int(cut2), len(in))
		if split := render(t, in[:a], in[a:b], in[b:]); split != whole {
			t.Fatalf("%q split at %d, %d renders %q, whole %q", in, a, b, split, whole)
		}
		bytewise := make([]string, len(in))
		for i := 0; i < len(in); i++ {
			bytewise[i] = in[i : i+1]
		}
		if one := render(t, bytewise...); one != whole {
			t.Fatalf("%q byte by byte renders %q, whole %q", in, one, whole)
		}
		// Text with nothing to neutralise passes unchanged (a colour left on gets a reset).
		clean := true
		for _, r := range in {
			if r == utf8.RuneError || r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r >= 0x7f && r < 0xa0 {
				clean = false
			}
		}
		if clean && utf8.ValidString(in) && whole != in {
			t.Fatalf("clean text %q changed to %q", in, whole)
		}
	})
}
