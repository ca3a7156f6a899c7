package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestInitStickyOwner (attack: a sticky directory of someone else's above the
// init). Others may not rename what is not theirs in a sticky directory, but
// its owner may: uid 65534's sticky, world-writable directory holding root's
// bin/agentbox-init lets that uid swap bin for a directory of its own, so the
// init is refused; the same directory of root's (as /tmp) is not.
func TestInitStickyOwner(t *testing.T) {
	testenv.RequireRoot(t)
	for _, c := range []struct {
		owner int
		want  string // "": trusted
	}{{0, ""}, {65534, "owned by uid 65534"}} {
		sticky := filepath.Join(t.TempDir(), "sticky")
		bin := filepath.Join(sticky, "bin")
		p := filepath.Join(bin, nsinit.Argv0Init)
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil || os.Chown(sticky, c.owner, c.owner) != nil {
			t.Fatal(err)
		}
		f, err := trustedInit(p)
		if f != nil {
			f.Close()
		}
		switch {
		case c.want == "" && (f == nil || err != nil):
			t.Errorf("root's init under root's sticky directory: %v, %v; want it", f, err)
		case c.want != "" && (f != nil || err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("root's init under uid %d's sticky directory: %v, %v; want a refusal naming %q", c.owner, f, err, c.want)
		}
	}
}

// TestInitReplacedAfterCheck (attack: replace the init between the check and
// its start). The file checked is held open and executed through its
// descriptor, so a file put at the path after the check is never run: the
// sandbox's init is the checked one, renamed away.
func TestInitReplacedAfterCheck(t *testing.T) {
	testenv.RequireRoot(t)
	p := buildInit(t)
	useInit(t, p)
	if err := os.Rename(p, p+".checked"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho planted > "+filepath.Join(filepath.Dir(p), "ran")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := Start(Config{Persistent: true}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(sb.Pid()) + "/exe")
	if n, derr := sb.Destroy(); n != 0 || derr != nil {
		t.Errorf("Destroy = %d, %v", n, derr)
	}
	if err != nil || exe != p+".checked" {
		t.Errorf("the init runs %q (%v), want the checked %s.checked", exe, err, p)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(p), "ran")); err == nil {
		t.Error("the file planted after the check ran")
	}
}
