package tool

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/workspace"
)

// TestFromErr pins how environment and workspace errors become agent codes, as
// they arrive wrapped from the environment service.
func TestFromErr(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("env: read calc.py: %w", err) }
	for _, tc := range []struct {
		err       error
		code      Code
		retryable bool
		action    string
	}{
		{&fs.PathError{Op: "read", Path: "../secret.txt", Err: workspace.ErrEscape}, EPERM, false, ActStop},
		{wrap(workspace.ErrHardlink), EPERM, false, ActStop},
		{wrap(fs.ErrPermission), EPERM, false, ActStop},
		{wrap(&workspace.TooLargeError{Path: "big", Size: 9 << 20, Limit: 8 << 20}), EFBIG, false, ActReadRange},
		{wrap(&workspace.LimitError{What: "directory entries", Limit: 10}), EFBIG, false, ActNarrow},
		{&fs.PathError{Op: "str_replace", Path: "a", Err: workspace.ErrNoMatch}, ENOMATCH, false, ActReread},
		{wrap(&workspace.AmbiguousError{Path: "a", Count: 2}), EAMBIGUOUS, false, ActReread},
		{wrap(&workspace.PatchError{Path: "a", Hunk: 1, Header: "@@ -1 +1 @@", Line: 3, Err: fmt.Errorf("mismatch")}), ENOMATCH, false, ActReread},
		{wrap(&workspace.PatchError{Err: fmt.Errorf("parse: bad")}), EINVAL, false, ActFixArgs},
		{wrap(workspace.ErrChanged), ETRANSIENT, true, ActRetry},
		{wrap(env.ErrBusy), ETRANSIENT, true, ActRetry},
		{wrap(env.ErrQuota), EQUOTA, false, ActStop},
		{wrap(env.ErrDestroyed), ENOENT, false, ActStop},
		{wrap(env.ErrNotFound), ENOENT, false, ActListDir},
		{&fs.PathError{Op: "read", Path: "nope", Err: fs.ErrNotExist}, ENOENT, false, ActListDir},
		{wrap(env.ErrInvalid), EINVAL, false, ActFixArgs},
		{wrap(workspace.ErrInvalidPath), EINVAL, false, ActFixArgs},
		{wrap(workspace.ErrNotRegular), EINVAL, false, ActFixArgs},
		{wrap(syscall.EISDIR), EINVAL, false, ActFixArgs},
		{wrap(context.DeadlineExceeded), ETIMEDOUT, true, ActNarrow},
		{wrap(context.Canceled), ECANCELLED, false, ActStop},
		{Errorf(EPRECONDITION, false, ActRunTests, "x"), EPRECONDITION, false, ActRunTests},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			e, known := FromErr(tc.err)
			if !known || e.Code != tc.code || e.Retryable != tc.retryable || e.SuggestedAction != tc.action {
				t.Fatalf("got %+v known=%v, want %s retryable=%v %s", e, known, tc.code, tc.retryable, tc.action)
			}
			if e.Message == "" {
				t.Error("empty message")
			}
		})
	}
	e, known := FromErr(fmt.Errorf("mount /var/lib/agentbox/env-1/upper: %w", syscall.EIO))
	if known || e.Code != EINTERNAL || strings.Contains(e.Message, "/var/lib") {
		t.Fatalf("unknown error: %+v known=%v", e, known)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("line of text\n", 1000)
	for _, tc := range []struct {
		name string
		in   string
		max  int
		cut  bool
	}{
		{"fits", "short\n", 100, false},
		{"exact", strings.Repeat("x", 100), 100, false},
		{"long", long, 1000, true},
		{"one huge line", strings.Repeat("é", 5000), 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Clip(tc.in, tc.max)
			if c.Truncated != tc.cut || c.TotalBytes != len(tc.in) {
				t.Fatalf("truncated=%v total=%d", c.Truncated, c.TotalBytes)
			}
			if !tc.cut {
				if c.Text != tc.in {
					t.Fatal("changed text that fits")
				}
				return
			}
			i := strings.Index(c.Text, "\n[… ")
			j := strings.Index(c.Text, " …]\n")
			if i < 0 || j < 0 {
				t.Fatalf("no marker in %q", c.Text)
			}
			head, tail := c.Text[:i], c.Text[j+len(" …]\n"):]
			if !strings.HasPrefix(tc.in, head) || !strings.HasSuffix(tc.in, tail) {
				t.Fatal("head or tail is not the input's")
			}
			if len(head)+len(tail)+c.OmittedBytes != len(tc.in) {
				t.Fatalf("head %d + tail %d + omitted %d != %d", len(head), len(tail), c.OmittedBytes, len(tc.in))
			}
			if len(head)+len(tail) > tc.max || len(tail) < len(head) {
				t.Fatalf("kept head %d tail %d of max %d", len(head), len(tail), tc.max)
			}
			if !strings.Contains(c.Text, fmt.Sprint(c.OmittedBytes)) {
				t.Error("marker does not count what it omits")
			}
		})
	}
}

func TestStore(t *testing.T) {
	s := NewStore(10)
	r, ok := s.Put([]byte("0123456789"), "out", "exec:stdout")
	if !ok || !strings.HasPrefix(r.Ref, "sha256:") || r.Size != 10 || r.Store != "coordinator" {
		t.Fatalf("%+v %v", r, ok)
	}
	if _, ok := s.Put([]byte("x"), "more", ""); ok {
		t.Fatal("store over its size accepted a blob")
	}
	if r2, ok := s.Put([]byte("0123456789"), "again", ""); !ok || r2.Ref != r.Ref {
		t.Fatal("the same content is not de-duplicated")
	}
	for _, tc := range []struct {
		off, n int64
		want   string
	}{{0, 0, "0123456789"}, {3, 4, "3456"}, {8, 10, "89"}, {20, 5, ""}} {
		b, _, ok := s.Read(r.Ref, tc.off, tc.n)
		if !ok || string(b) != tc.want {
			t.Errorf("read %d,%d = %q", tc.off, tc.n, b)
		}
	}
	if _, _, ok := s.Read("sha256:00", 0, 0); ok {
		t.Error("unknown ref read")
	}
}
