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
// replacing an older one.
func NewLocalToken(path string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := "abx_" + hex.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("token directory: %w", err)
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	_, werr := f.WriteString(tok + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write token: %w", werr)
	}
	return tok, nil
}

// ReadLocalToken reads the token a local daemon wrote; a missing file is "".
func ReadLocalToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
