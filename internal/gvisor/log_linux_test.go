package gvisor

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// runsc exits 128+N both for a death by signal N and for an exit with that code;
// the raw status in its log tells them apart.
func TestExitStatusFromLog(t *testing.T) {
	for _, tc := range []struct {
		log      string
		ok       bool
		code     int
		signaled syscall.Signal
	}{
		{"I1202 04:55:23.335571   29969 cli.go:317] Exiting with status: 11\n", true, 0, syscall.SIGSEGV},
		{"I1202 cli.go:317] Exiting with status: 35072\n", true, 137, 0},
		{"I1202 cli.go:317] Exiting with status: 0\n", true, 0, 0},
		{"W1202 util.go:107] FATAL ERROR: starting container\n", false, 0, 0},
		{"I1202 cli.go:317] Exiting with status: x\n", false, 0, 0},
	} {
		p := filepath.Join(t.TempDir(), "log")
		os.WriteFile(p, []byte(tc.log), 0o600)
		ws, ok := exitStatus(p)
		if ok != tc.ok {
			t.Errorf("%q: ok %v", tc.log, ok)
			continue
		}
		if !ok {
			continue
		}
		if ws.Signaled() && ws.Signal() != tc.signaled || !ws.Signaled() && (tc.signaled != 0 || ws.ExitStatus() != tc.code) {
			t.Errorf("%q: status %v", tc.log, ws)
		}
	}
}

func TestRunscError(t *testing.T) {
	for _, tc := range []struct {
		log  string
		want error
	}{
		{"W1202 util.go:107] FATAL ERROR: starting sandbox: error finding executable \"x\" in PATH [/bin]: no such file or directory\nW1202 main.go:1] Failure to execute command, err: 1\n", ErrNotFound},
		{"W1202 util.go:107] FATAL ERROR: creating process: failed to load /etc/passwd: permission denied\n", ErrNotExecutable},
		{"W1202 util.go:107] FATAL ERROR: mounting /usr: no such file or directory\n", nil},
	} {
		p := filepath.Join(t.TempDir(), "log")
		os.WriteFile(p, []byte(tc.log), 0o600)
		err := runscError(p, errors.New("exit status 128"))
		if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotExecutable)) {
			t.Errorf("%q: %v", tc.log, err)
		}
	}
}
