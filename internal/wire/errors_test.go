package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/workspace"
)

func pathErr(errno syscall.Errno) error { return &fs.PathError{Op: "write", Path: "a.txt", Err: errno} }

// TestMap is the mapping table's test: every sentinel and errno a file operation
// can meet, with the status, code and retry flag it gets. Issue 10, finding 12:
// ENOSPC and ENAMETOOLONG were a retryable 503 "daemon did not answer" (an errno
// is a net.Error), so clients retried for ever.
func TestMap(t *testing.T) {
	red := NewRedactor("/var/lib/agentbox", "/srv/work/")
	matched := map[int]bool{} // rows of the table some case reached
	for _, tc := range []struct {
		err       error
		status    int
		code      string
		retryable bool
		msg       string // substring of the message
	}{
		{fmt.Errorf("x: %w", env.ErrInvalid), 400, "EINVAL", false, "x: invalid request"},
		{BadRequest("argv is empty"), 400, "EINVAL", false, "argv is empty"},
		{fmt.Errorf("a: %w", workspace.ErrInvalidPath), 400, "EINVAL", false, "invalid path"},
		{fmt.Errorf("a: %w", workspace.ErrNotRegular), 400, "EINVAL", false, "not a regular file"},
		{fmt.Errorf("a: %w", workspace.ErrSymlink), 400, "EINVAL", false, "symbolic link"},
		{access.ErrUnauthenticated, 401, "EAUTH", false, "bearer token"},
		{&access.ScopeError{Scope: "exec"}, 403, "EPERM", false, `"exec" scope`},
		{fmt.Errorf("../x: %w", workspace.ErrEscape), 403, "EPERM", false, "escapes"},
		{fmt.Errorf("a: %w", workspace.ErrHardlink), 403, "EPERM", false, "hard link"},
		{&fs.PathError{Op: "open", Path: "a", Err: fs.ErrPermission}, 403, "EPERM", false, "permission denied"},
		{fmt.Errorf("env abc owned by b: %w", env.ErrNotFound), 404, "ENOENT", false, "environment \"abc\" not found"},
		{fmt.Errorf("%w: python", image.ErrNotFound), 404, "ENOENT", false, "no such image: python"},
		{fmt.Errorf("%w: image name \"Py\"", access.ErrBadTemplate), 400, "EINVAL", false, `image name "Py"`},
		{fmt.Errorf("build: step 1 (run: x): %w", image.ErrNoRunner), 400, "EINVAL", false, "build sandbox"},
		{fmt.Errorf("gone: %w", env.ErrDestroyed), 404, "ENOENT", false, "destroyed"},
		{&fs.PathError{Op: "read", Path: "a.txt", Err: fs.ErrNotExist}, 404, "ENOENT", false, "read a.txt"},
		{&fs.PathError{Op: "mkdir", Path: "d", Err: fs.ErrExist}, 409, "EEXIST", false, "exists"},
		{fmt.Errorf("environment e: %w", env.ErrPaused), 409, "EPAUSED", false, "paused"},
		{fmt.Errorf("x: %w", env.ErrBusy), 409, "EBUSY", true, "busy"},
		{fmt.Errorf("a: %w", workspace.ErrChanged), 409, "EBUSY", true, "changed"},
		{&workspace.PatchError{Path: "a.go", Hunk: 2, Header: "@@ -1 +1 @@", Line: 7, Err: errors.New("context mismatch")}, 409, "ECONFLICT", false, "hunk #2"},
		{fmt.Errorf("a: %w", workspace.ErrNoMatch), 409, "ECONFLICT", false, "not found"},
		{&workspace.AmbiguousError{Path: "a", Count: 3}, 409, "ECONFLICT", false, "3 times"},
		{&workspace.TooLargeError{Path: "big", Size: 9 << 20, Limit: 8 << 20}, 413, "EFBIG", false, "exceeds"},
		{&workspace.LimitError{What: "entries", Limit: 10}, 413, "EFBIG", false, "entries"},
		{&http.MaxBytesError{Limit: 10}, 413, "EFBIG", false, "10 bytes"},
		{fmt.Errorf("%w: 3 of 3", env.ErrQuota), 429, "EQUOTA", false, "3 of 3"},
		{fmt.Errorf("export a: %w", &env.QuotaError{Msg: "artifacts over 2", Action: "wait"}), 429, "EQUOTA", false, "artifacts over 2"},
		{fmt.Errorf("%w: workspace \"/srv/x\" (config key tenants.local.workspace_roots)", access.ErrOutsideRoots), 403, "EPERM", false, "workspace_roots"},
		{access.ErrRate, 429, "ERATE", true, "rate"},
		{ErrShuttingDown, 503, "EUNAVAIL", true, "shutting down"},
		{context.DeadlineExceeded, 503, "EUNAVAIL", true, "timed out"},
		{errors.New("open /var/lib/agentbox/x: disk on fire"), 500, "EINTERNAL", false, "internal error"},
		{&client.Error{Code: "EQUOTA", Message: "remote", Status: 429}, 429, "EQUOTA", false, "remote"},
		{&client.NoDaemonError{Addr: "/run/agentbox/agentbox.sock", Err: syscall.ECONNREFUSED}, 503, "EUNAVAIL", true, "not running"},
		{&net.OpError{Op: "read", Net: "unix", Err: syscall.ECONNRESET}, 503, "EUNAVAIL", true, "did not answer"},
		{&url.Error{Op: "Post", URL: "http://agentbox/v1", Err: io.ErrUnexpectedEOF}, 503, "EUNAVAIL", true, "did not answer"},
		// Host paths in messages that do reach callers are redacted.
		{fmt.Errorf("create in /var/lib/agentbox/envs/x: %w", env.ErrInvalid), 400, "EINVAL", false, "create in <host>/envs/x"},

		// Every errno a file operation may meet, bare or in an *fs.PathError.
		{pathErr(syscall.ENOSPC), 507, "ENOSPC", false, "no space left"},
		{fmt.Errorf("artifact store: copy: %w", syscall.ENOSPC), 507, "ENOSPC", false, "no space left"},
		{pathErr(syscall.EDQUOT), 507, "ENOSPC", false, "quota"},
		{pathErr(syscall.EFBIG), 413, "EFBIG", false, "too large"},
		{pathErr(syscall.ENAMETOOLONG), 400, "EINVAL", false, "name too long"},
		{pathErr(syscall.ELOOP), 400, "EINVAL", false, "symbolic links"},
		{pathErr(syscall.EACCES), 403, "EPERM", false, "permission denied"},
		{pathErr(syscall.EPERM), 403, "EPERM", false, "not permitted"},
		{pathErr(syscall.EROFS), 403, "EPERM", false, "read-only"},
		{pathErr(syscall.EEXIST), 409, "EEXIST", false, "exists"},
		{pathErr(syscall.ENOTEMPTY), 409, "EEXIST", false, "not empty"},
		{pathErr(syscall.ENOENT), 404, "ENOENT", false, "no such file"},
		{pathErr(syscall.ENOTDIR), 400, "EINVAL", false, "not a directory"},
		{pathErr(syscall.EISDIR), 400, "EINVAL", false, "is a directory"},
		{pathErr(syscall.EINVAL), 400, "EINVAL", false, "invalid argument"},
		{pathErr(syscall.EXDEV), 400, "EINVAL", false, "cross-device"},
		{pathErr(syscall.ETXTBSY), 409, "EBUSY", true, "text file busy"},
		{pathErr(syscall.EBUSY), 409, "EBUSY", true, "busy"},
		{pathErr(syscall.EAGAIN), 409, "EBUSY", true, "temporarily unavailable"},
		{pathErr(syscall.EMFILE), 503, "EUNAVAIL", true, "descriptors"},
		{pathErr(syscall.ENFILE), 503, "EUNAVAIL", true, "descriptors"},
		{pathErr(syscall.ENOMEM), 503, "EUNAVAIL", true, "memory"},
		// An errno no row names is internal: never "unavailable", never retried.
		{pathErr(syscall.EOVERFLOW), 500, "EINTERNAL", false, "internal error"},
		{pathErr(syscall.EIO), 500, "EINTERNAL", false, "internal error"},
		{syscall.ENOSPC, 507, "ENOSPC", false, "no space left"},
	} {
		t.Run(fmt.Sprintf("%T %v", tc.err, tc.err), func(t *testing.T) {
			st, e := Map(tc.err, `environment "abc"`, red)
			if tc.code == "EAUTH" && !strings.Contains(e.SuggestedAction, "$AGENTBOX_TOKEN") {
				t.Errorf("EAUTH's action %q does not say where the CLI takes its token", e.SuggestedAction)
			}
			if st != tc.status || e.Code != tc.code || e.Retryable != tc.retryable || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %d %+v, want %d %s retryable=%v containing %q", st, e, tc.status, tc.code, tc.retryable, tc.msg)
			}
			if strings.Contains(e.Message, "/var/lib") || strings.Contains(e.Message, "disk on fire") {
				t.Fatalf("host detail reached the caller: %q", e.Message)
			}
			var ae *Error
			var ce *client.Error
			if st != 500 && e.SuggestedAction == "" && !errors.As(tc.err, &ae) && !errors.As(tc.err, &ce) {
				t.Fatalf("%d %s without a suggested action", st, e.Code)
			}
			// Only a daemon that is not there, stopping, or short of something
			// is a retryable 503; nothing retryable is a client's mistake.
			if (st == 503) != (e.Code == "EUNAVAIL") || (e.Retryable && st != 409 && st != 429 && st != 503) {
				t.Fatalf("%d %s retryable=%v breaks the retry rules", st, e.Code, e.Retryable)
			}
		})
		for i, r := range rules {
			if r.matches(tc.err) {
				matched[i] = true
				break
			}
		}
	}
	for i, r := range rules {
		if !matched[i] {
			t.Errorf("row %d of the table (%s %d) has no case", i, r.code, r.status)
		}
	}
}

// TestMapNotFoundIgnoresErrorText: the ENOENT message of env.ErrNotFound depends
// only on what the caller asked for, never on the service's text (which may say
// whose the object is).
func TestMapNotFoundIgnoresErrorText(t *testing.T) {
	_, e1 := Map(fmt.Errorf("env x belongs to tenant b: %w", env.ErrNotFound), `environment "x"`, nil)
	_, e2 := Map(fmt.Errorf("no env x: %w", env.ErrNotFound), `environment "x"`, nil)
	if e1 != e2 {
		t.Fatalf("%+v != %+v", e1, e2)
	}
}
