package workspace

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  error
	}{
		{"", ".", nil},
		{".", ".", nil},
		{"a/b", "a/b", nil},
		{"a//b/./c/", "a/b/c", nil},
		{"a/../b", "b", nil},
		{"a/..", ".", nil},
		{"..", "", ErrEscape},
		{"../a", "", ErrEscape},
		{"a/../../b", "", ErrEscape},
		{"/etc/passwd", "", ErrEscape},
		{"//x", "", ErrEscape},
		{"a\x00b", "", ErrInvalidPath},
		{strings.Repeat("a/", 2049), "", ErrInvalidPath},
		{"nl\nname", "nl\nname", nil},
		{"bad\xffutf8", "bad\xffutf8", nil},
		{"...", "...", nil},
		{"a\\..\\..", "a\\..\\..", nil}, // backslash is an ordinary byte on Linux
	}
	for _, tc := range tests {
		got, err := CleanPath(tc.in)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestLinkStaysInside(t *testing.T) {
	tests := []struct {
		link, target string
		want         bool
	}{
		{"l", "a", true},
		{"d/l", "../a", true},
		{"d/l", "../../a", false},
		{"l", "../a", false},
		{"l", "/etc/passwd", false},
		{"l", "", false},
		{"d/e/l", "../../x/../y", true},
		{"d/l", ".", true},
	}
	for _, tc := range tests {
		if got := linkStaysInside(tc.link, tc.target); got != tc.want {
			t.Errorf("linkStaysInside(%q, %q) = %v", tc.link, tc.target, got)
		}
	}
}

// The invariants of CleanPath for any input: it either fails, or returns a clean,
// relative path without NUL that does not climb out.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "/abs", "a/../..", "a\x00", "a//b/", "x/./../../y", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := CleanPath(in)
		if err != nil {
			if got != "" || (!errors.Is(err, ErrEscape) && !errors.Is(err, ErrInvalidPath)) {
				t.Fatalf("CleanPath(%q) = %q, %v", in, got, err)
			}
			return
		}
		switch {
		case got == "", strings.HasPrefix(got, "/"), got == "..", strings.HasPrefix(got, "../"),
			strings.IndexByte(got, 0) >= 0, path.Clean(got) != got:
			t.Fatalf("CleanPath(%q) = %q", in, got)
		}
		if again, err := CleanPath(got); err != nil || again != got {
			t.Fatalf("CleanPath not idempotent on %q: %q, %v", got, again, err)
		}
	})
}
