package wire

import (
	"io/fs"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/workspace"
)

// TestRemoteEntry: entry is fileEntry's inverse for every type.
func TestRemoteEntry(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	for _, m := range []fs.FileMode{0o644, fs.ModeDir | 0o755, fs.ModeSymlink | 0o777, fs.ModeIrregular | 0o600} {
		e := workspace.Entry{Path: "a/b", Name: "b", Mode: m, Size: 3, ModTime: now, Links: 1, LinkTarget: "x"}
		if got := entry(fileEntry(e)); got != e {
			t.Errorf("%v: %+v, want %+v", m, got, e)
		}
	}
}

// TestRemoteResult: an exec result crosses the wire and back unchanged
// (result, then Remote's decoding), network events included.
func TestRemoteResult(t *testing.T) {
	sig := "KILL"
	r := &runner.Result{ExitCode: 137, Signal: &sig, Limit: runner.LimitMemory, Stdout: "o", StdoutTruncated: true, StdoutBytes: 9,
		StdoutRef: "sha256:ab", DurationMS: 5, Survivors: 1, Isolation: runner.IsolationNamespace, LandlockABI: 4}
	got, err := decodeResult(result(r))
	if err != nil || got.ExitCode != 137 || *got.Signal != "KILL" || got.Limit != runner.LimitMemory || got.StdoutRef != "sha256:ab" ||
		got.Isolation != runner.IsolationNamespace || got.LandlockABI != 4 || !got.StdoutTruncated {
		t.Fatalf("%+v %v", got, err)
	}
}

// TestRemoteErrors: a daemon's envelope is classified by the tools as the
// local error it stands for, with the daemon's message; Map gives the
// envelope back unchanged.
func TestRemoteErrors(t *testing.T) {
	for code, want := range map[string]tool.Code{
		client.CodeNotFound: tool.ENOENT, client.CodePermission: tool.EPERM, client.CodeConflict: tool.ENOMATCH,
		client.CodeBusy: tool.ETRANSIENT, client.CodeQuota: tool.EQUOTA, client.CodeInvalid: tool.EINVAL, client.CodeTooLarge: tool.EFBIG,
	} {
		ce := &client.Error{Code: code, Message: "m " + code, Status: 400}
		te, _ := tool.FromErr(remoteErr(ce))
		if te.Code != want || te.Message != ce.Error() {
			t.Errorf("%s: %s %q, want %s", code, te.Code, te.Message, want)
		}
		if st, e := Map(remoteErr(ce), "x", nil); st != 400 || e.Code != code {
			t.Errorf("%s: Map gives %d %s", code, st, e.Code)
		}
	}
	if te, _ := tool.FromErr(remoteErr(&client.Error{Code: client.CodeInternal, Message: "host path /srv/x"})); te.Code != tool.EINTERNAL ||
		te.Message != "internal error" {
		t.Errorf("an internal error: %+v", te)
	}
}
