package image

import (
	"errors"
	"strings"
	"testing"
)

func TestCleanName(t *testing.T) {
	for _, c := range []struct {
		in, want string
		unsafe   bool
	}{
		{"a/b", "a/b", false},
		{"./a/./b/", "a/b", false},
		{"/etc/passwd", "etc/passwd", false},
		{"//a//b", "a/b", false},
		{".", "", false},
		{"./", "", false},
		{"", "", false},
		{"..", "", true},
		{"../a", "", true},
		{"a/../b", "", true},
		{"a/..", "", true},
		{"/../etc", "", true},
		{"a/...", "a/...", false},
		{"..a/b..", "..a/b..", false},
		{"a\x00b", "", true},
		{strings.Repeat("x", 255), strings.Repeat("x", 255), false},
		{strings.Repeat("x", 256), "", true},
		{strings.Repeat("a/", 2048), "", true},
	} {
		got, err := cleanName(c.in)
		if c.unsafe != errors.Is(err, ErrUnsafe) || got != c.want {
			t.Errorf("cleanName(%.40q) = %q, %v; want %q, unsafe %v", c.in, got, err, c.want, c.unsafe)
		}
	}
}

// FuzzCleanName: a cleaned name never has an empty, "." or ".." component, is
// never absolute, and cleaning it again changes nothing.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/abs", "./a/./b/", "a//..//b", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := cleanName(s)
		if err != nil {
			return
		}
		if got == "" {
			return
		}
		if strings.HasPrefix(got, "/") {
			t.Fatalf("cleanName(%q) = %q is absolute", s, got)
		}
		for c := range strings.SplitSeq(got, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("cleanName(%q) = %q has component %q", s, got, c)
			}
		}
		if again, err := cleanName(got); err != nil || again != got {
			t.Fatalf("cleanName(%q) = %q, then %q, %v", s, got, again, err)
		}
	})
}

func TestKeepXattr(t *testing.T) {
	for name, want := range map[string]bool{
		"user.comment":            true,
		"user.mime_type":          true,
		"user.overlay.opaque":     false,
		"user.overlay.whiteout":   false,
		"security.capability":     false,
		"security.selinux":        false,
		"trusted.overlay.opaque":  false,
		"system.posix_acl_access": false,
	} {
		if keepXattr(name) != want {
			t.Errorf("keepXattr(%q) = %v", name, !want)
		}
	}
}
