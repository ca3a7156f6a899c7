package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// DefaultSocket is where the daemon listens and the CLI looks for it:
// $AGENTBOX_SOCKET if set; /run/agentbox/agentbox.sock as root;
// $XDG_RUNTIME_DIR/agentbox.sock; else /tmp/agentbox-UID/agentbox.sock.
func DefaultSocket() string {
	if s := os.Getenv("AGENTBOX_SOCKET"); s != "" {
		return s
	}
	if os.Geteuid() == 0 {
		return "/run/agentbox/agentbox.sock"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "agentbox.sock")
	}
	return filepath.Join(os.TempDir(), "agentbox-"+strconv.Itoa(os.Geteuid()), "agentbox.sock")
}

// DefaultStateDir is where environments keep their state by default.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/agentbox"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentbox")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "agentbox")
	}
	return filepath.Join(os.TempDir(), "agentbox-state-"+strconv.Itoa(os.Geteuid()))
}

// LocalTokenFile is where a daemon started without a configuration file writes the
// token of its one tenant, next to its socket, readable by its user alone.
func LocalTokenFile(socket string) string {
	return filepath.Join(filepath.Dir(socket), "agentbox.token")
}

// NewLocalToken creates a random token and writes it to path with mode 0600,
// replacing an older one. The directory is created 0700 if missing and must be
// the user's own (OpenSocketDir); the file is created, never followed, in the
// directory as checked.
func NewLocalToken(path string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := "abx_" + hex.EncodeToString(b[:])
	dir, err := OpenSocketDir(filepath.Dir(path), 0o700)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	name := filepath.Base(path)
	tmp := name + ".tmp"
	dir.Remove(tmp)
	if err := CheckRoot(dir); err != nil {
		return "", err
	}
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	_, werr := f.WriteString(tok + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = dir.Rename(tmp, name)
	}
	if werr != nil {
		dir.Remove(tmp)
		return "", fmt.Errorf("write token: %w", werr)
	}
	return tok, nil
}

// ReadLocalToken reads the token a local daemon wrote; a missing file is "". The
// directory must be the user's or root's own (OpenDaemonDir): a token another
// user could have planted is refused.
func ReadLocalToken(path string) (string, error) {
	dir, err := OpenDaemonDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer dir.Close()
	b, err := dir.ReadFile(filepath.Base(path))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// LocalWorkspaceRoots are the directories a personal daemon (serve without a
// configuration file) lets its user create environments from: the user's home
// directory and the directory it was started in, each only if it is an absolute
// directory other than "/" (a root of "/" would be every file the daemon can read).
// A workspace is the read-only lower layer of a copy-on-write overlay, so nothing
// under them is ever changed by an environment.
func LocalWorkspaceRoots() []string {
	var roots []string
	add := func(d string, err error) {
		if err != nil || !filepath.IsAbs(d) {
			return
		}
		d = filepath.Clean(d)
		if fi, err := os.Stat(d); d == "/" || err != nil || !fi.IsDir() {
			return
		}
		for _, r := range roots {
			if d == r || strings.HasPrefix(d, r+"/") {
				return // already covered
			}
		}
		roots = append(roots, d)
	}
	add(os.UserHomeDir())
	add(os.Getwd())
	return roots
}

// ConfigFile is the configuration file `agentbox config init` writes by default:
// $AGENTBOX_CONFIG, else $XDG_CONFIG_HOME/agentbox/config.yaml, else
// ~/.config/agentbox/config.yaml.
func ConfigFile() (string, error) {
	if p := os.Getenv("AGENTBOX_CONFIG"); p != "" {
		return p, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory: %w; name the file: agentbox config init PATH", err)
	}
	return filepath.Join(d, "agentbox", "config.yaml"), nil
}
