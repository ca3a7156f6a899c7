package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// The init is agentbox-init (cmd/agentbox-init) when one is installed beside the
// running executable: package nsinit alone, a few MB, where this binary re-executed
// as the init maps tens of MB and initialises the packages of everything linked into
// it (issue 16: the larger part of a sandbox's start). Without one, the running
// binary is re-executed as the init, so `go run` and a lone binary keep working.

// initBinary is the separate init to start, open: nil for none (re-execute this
// binary), or an error if one is installed but is not to be trusted. What it
// finds stays open for the life of the process; the init is executed through the
// descriptor (see Start), so the file checked is the file run, and the init's
// host uid needs no search permission on the directories above it. A refusal is
// not kept: a daemon whose init an administrator then fixes (its mode, its owner)
// starts sandboxes again without a restart.
var initBinary = func() (*os.File, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil
	}
	return installedInit.get(filepath.Join(filepath.Dir(exe), nsinit.Argv0Init))
}

var installedInit initCache

// initCache keeps the init trustedInit accepted (or that there is none); a
// refusal is asked again the next time.
type initCache struct {
	mu    sync.Mutex
	found bool     // f is what trustedInit found
	f     *os.File // nil: none installed
}

func (c *initCache) get(p string) (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.found {
		return c.f, nil
	}
	f, err := trustedInit(p)
	if err != nil {
		return nil, err
	}
	c.f, c.found = f, true
	return f, nil
}

// trustedInit opens p if it is an init agentbox may start: a regular executable
// file owned by root or by agentbox's own user, which nobody else can change or
// replace (no group or others may write it, nor any directory above it unless the
// directory is sticky and root's or agentbox's user's, where they may not rename
// what is not theirs). Nil if p does not exist. Whether it was built from the same
// sources is the init's own check (see nsinit.BuildKey): a stale one refuses the Spec.
func trustedInit(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	refuse := func(why string) (*os.File, error) {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("sandbox init %s is not trusted: %s; it must be a regular executable file of root (or of the user running agentbox) that no one else may write, in directories no one else may write: fix its owner and mode, or remove it (agentbox then starts itself as the init)", p, why)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox init %s: %w", p, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("sandbox init %s: %w", p, err)
	case !fi.Mode().IsRegular():
		return refuse("not a regular file (a symlink is not followed)")
	case fi.Mode().Perm()&0o111 == 0:
		return refuse("not executable")
	}
	if why := foreignWritable(fi, false); why != "" {
		return refuse(why)
	}
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		di, err := os.Lstat(d)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("sandbox init %s: %w", p, err)
		}
		if why := foreignWritable(di, true); why != "" {
			return refuse(d + ": " + why)
		}
		if d == "/" || d == "." {
			return f, nil
		}
	}
}

// foreignWritable says why someone other than root and agentbox's user could change
// fi, or "". A sticky directory (sticky: allowed) others may write is not
// such a reason: they may not rename what is not theirs there. Its owner may,
// so it is one unless root or agentbox's user owns it.
func foreignWritable(fi fs.FileInfo, sticky bool) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return "no owner"
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("owned by uid %d", st.Uid)
	case sticky && fi.Mode()&os.ModeSticky != 0:
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("mode %v lets group or others write", fi.Mode().Perm())
	}
	return ""
}
