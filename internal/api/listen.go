package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/config"
)

// Listen opens the configured TCP address, or else the Unix socket. The socket is
// bound in a private directory, given its mode, and only then renamed into place,
// so it is never reachable with looser permissions. A stale socket (nobody
// answers) is replaced; a live one is an error, as is any other file in its place.
func Listen(cfg *config.Config) (net.Listener, error) {
	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		return ln, nil
	}
	mode, err := strconv.ParseUint(cfg.SocketMode, 8, 32)
	if err != nil {
		return nil, fmt.Errorf("socket mode: %w", err)
	}
	path := cfg.Socket
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another agentbox daemon is listening at %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	tmpDir, err := os.MkdirTemp(dir, ".agentbox-sock-")
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, fs.FileMode(mode)); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket mode: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	return &unixListener{UnixListener: ul, path: path, fi: fi}, nil
}

// unixListener removes its socket file on Close, unless another file replaced it.
type unixListener struct {
	*net.UnixListener
	path string
	fi   fs.FileInfo
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.fi) {
		os.Remove(l.path)
	}
	return err
}

// Run serves o on ln until ctx is done, then shuts down gracefully within the
// configured grace period (see Server.Shutdown).
func Run(ctx context.Context, o Options, ln net.Listener) error {
	s, err := New(o)
	if err != nil {
		ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", time.Duration(o.Config.Shutdown.Grace))
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.Config.Shutdown.Grace))
	defer cancel()
	err = s.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, syscall.EINVAL) && err == nil {
		err = serr
	}
	return err
}
