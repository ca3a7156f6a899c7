package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/workspace"
)

func TestMap(t *testing.T) {
	red := NewRedactor("/var/lib/agentbox", "/srv/work/")
	for _, tc := range []struct {
		err       error
		status    int
		code      string
		retryable bool
		msg       string // substring of the message
	}{
		{fmt.Errorf("x: %w", env.ErrInvalid), 400, "EINVAL", false, "x: invalid request"},
		{badRequest("argv is empty"), 400, "EINVAL", false, "argv is empty"},
		{fmt.Errorf("a: %w", workspace.ErrInvalidPath), 400, "EINVAL", false, "invalid path"},
		{fmt.Errorf("a: %w", workspace.ErrNotRegular), 400, "EINVAL", false, "not a regular file"},
		{fmt.Errorf("a: %w", workspace.ErrSymlink), 400, "EINVAL", false, "symbolic link"},
		{ErrUnauthenticated, 401, "EAUTH", false, "bearer token"},
		{&ScopeError{Scope: "exec"}, 403, "EPERM", false, `"exec" scope`},
		{fmt.Errorf("../x: %w", workspace.ErrEscape), 403, "EPERM", false, "escapes"},
		{fmt.Errorf("a: %w", workspace.ErrHardlink), 403, "EPERM", false, "hard link"},
		{&fs.PathError{Op: "open", Path: "a", Err: fs.ErrPermission}, 403, "EPERM", false, "permission denied"},
		{fmt.Errorf("env abc owned by b: %w", env.ErrNotFound), 404, "ENOENT", false, "environment \"abc\" not found"},
		{fmt.Errorf("gone: %w", env.ErrDestroyed), 404, "ENOENT", false, "destroyed"},
		{&fs.PathError{Op: "read", Path: "a.txt", Err: fs.ErrNotExist}, 404, "ENOENT", false, "read a.txt"},
		{&fs.PathError{Op: "mkdir", Path: "d", Err: fs.ErrExist}, 409, "EEXIST", false, "exists"},
		{fmt.Errorf("x: %w", env.ErrBusy), 409, "EBUSY", true, "busy"},
		{fmt.Errorf("a: %w", workspace.ErrChanged), 409, "EBUSY", true, "changed"},
		{&workspace.PatchError{Path: "a.go", Hunk: 2, Header: "@@ -1 +1 @@", Line: 7, Err: errors.New("context mismatch")}, 409, "ECONFLICT", false, "hunk #2"},
		{fmt.Errorf("a: %w", workspace.ErrNoMatch), 409, "ECONFLICT", false, "not found"},
		{&workspace.AmbiguousError{Path: "a", Count: 3}, 409, "ECONFLICT", false, "3 times"},
		{&workspace.TooLargeError{Path: "big", Size: 9 << 20, Limit: 8 << 20}, 413, "EFBIG", false, "exceeds"},
		{&workspace.LimitError{What: "entries", Limit: 10}, 413, "EFBIG", false, "entries"},
		{&http.MaxBytesError{Limit: 10}, 413, "EFBIG", false, "10 bytes"},
		{fmt.Errorf("%w: 3 of 3", env.ErrQuota), 429, "EQUOTA", false, "3 of 3"},
		{ErrRate, 429, "ERATE", true, "rate"},
		{ErrShuttingDown, 503, "EUNAVAIL", true, "shutting down"},
		{context.DeadlineExceeded, 503, "EUNAVAIL", true, "timed out"},
		{errors.New("open /var/lib/agentbox/x: disk on fire"), 500, "EINTERNAL", false, "internal error"},
		{&client.Error{Code: "EQUOTA", Message: "remote", Status: 429}, 429, "EQUOTA", false, "remote"},
		{&client.NoDaemonError{Addr: "/run/agentbox/agentbox.sock", Err: syscall.ECONNREFUSED}, 503, "EUNAVAIL", true, "not running"},
		{&net.OpError{Op: "read", Net: "unix", Err: syscall.ECONNRESET}, 503, "EUNAVAIL", true, "did not answer"},
		// Host paths in messages that do reach callers are redacted.
		{fmt.Errorf("create in /var/lib/agentbox/envs/x: %w", env.ErrInvalid), 400, "EINVAL", false, "create in <host>/envs/x"},
	} {
		t.Run(fmt.Sprintf("%T %v", tc.err, tc.err), func(t *testing.T) {
			st, e := Map(tc.err, `environment "abc"`, red)
			if st != tc.status || e.Code != tc.code || e.Retryable != tc.retryable || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %d %+v, want %d %s retryable=%v containing %q", st, e, tc.status, tc.code, tc.retryable, tc.msg)
			}
			if strings.Contains(e.Message, "/var/lib") || strings.Contains(e.Message, "disk on fire") {
				t.Fatalf("host detail reached the caller: %q", e.Message)
			}
		})
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
