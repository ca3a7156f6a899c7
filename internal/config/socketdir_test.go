package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestSocketDirRefused guards issue 10's finding 8: a daemon without
// $XDG_RUNTIME_DIR used $TMPDIR/agentbox-UID without checking who made it, so
// another user who created it first could swap the socket and capture the token.
// A directory another user owns, or may write in, is refused on both sides (the
// daemon writing its token, a client reading it), with an error naming it and
// what to do, and nothing is written there.
func TestSocketDirRefused(t *testing.T) {
	testenv.RequireRoot(t) // to give a directory to another uid
	for _, tc := range []struct {
		name   string
		make   func(dir string) error
		reason string
	}{
		{"another user's", func(d string) error { return os.Chown(d, 12345, 12345) }, "owned by uid 12345"},
		{"world-writable", func(d string) error { return os.Chmod(d, 0o777) }, "writable by group or others (mode 0777)"},
		{"group-writable", func(d string) error { return os.Chmod(d, 0o770) }, "writable by group or others (mode 0770)"},
		{"sticky like /tmp", func(d string) error { return os.Chmod(d, 0o1777) }, "writable by group or others"},
		{"a symlink to our own", func(d string) error {
			own := d + ".real"
			if err := os.Mkdir(own, 0o700); err != nil {
				return err
			}
			os.Remove(d)
			return os.Symlink(own, d)
		}, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "agentbox-1000")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(dir); err != nil {
				t.Fatal(err)
			}
			tokFile := filepath.Join(dir, "agentbox.token")
			refused := func(what string, err error) {
				t.Helper()
				var ue *UnsafeDirError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), dir+" ") ||
					!strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "--socket") {
					t.Fatalf("%s: err = %v, want an UnsafeDirError naming %s, %q and what to do", what, err, dir, tc.reason)
				}
			}
			_, err := NewLocalToken(tokFile)
			refused("daemon", err)
			if _, err := os.Lstat(tokFile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a token was written in the refused directory: %v", err)
			}
			_, err = OpenSocketDir(dir, 0o700)
			refused("daemon", err)
			if tc.name != "another user's" { // root's (ours) is trusted by clients
				_, err = OpenDaemonDir(dir)
				refused("client", err)
			}
		})
	}
}

// TestClientRefusesPlantedToken: a token file in a directory another user owns is
// not read (it could be theirs, leading the client to their daemon).
func TestClientRefusesPlantedToken(t *testing.T) {
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o700)
	tokFile := filepath.Join(dir, "agentbox.token")
	os.WriteFile(tokFile, []byte("planted-token-0123456789\n"), 0o600)
	os.Chown(dir, 12345, 12345)
	if tok, err := ReadLocalToken(tokFile); tok != "" || !errors.Is(err, ErrUnsafeDir) {
		t.Fatalf("ReadLocalToken = %q, %v; want ErrUnsafeDir", tok, err)
	}
	os.Chown(dir, 0, 0)
	if tok, err := ReadLocalToken(tokFile); tok != "planted-token-0123456789" || err != nil {
		t.Fatalf("our own directory: %q, %v", tok, err)
	}
}

// TestSocketDirCreated: a missing directory is made 0700 whatever the umask, and
// an existing 0755 one (older daemons made it so) is accepted.
func TestSocketDirCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "run")
	r, err := OpenSocketDir(dir, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v %v, want 0700", fi.Mode(), err)
	}
	os.Chmod(dir, 0o755)
	r, err = OpenSocketDir(dir, 0o700)
	if err != nil {
		t.Fatalf("0755: %v", err)
	}
	// Changed after it was opened: the check before each use sees it.
	os.Chmod(dir, 0o777)
	if err := CheckRoot(r); !errors.Is(err, ErrUnsafeDir) {
		t.Fatalf("CheckRoot after chmod 0777: %v", err)
	}
	r.Close()
}
