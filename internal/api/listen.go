package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// Listen opens the configured TCP address, or else the Unix socket. The socket's
// directory must be the daemon user's own (config.OpenSocketDir: created 0700, or
// 0750 for socket_mode 0660, if missing; refused if another user owns it or may
// write in it). The socket is bound in a private directory inside it, given its
// mode, and only then renamed into place, so it is never reachable with looser
// permissions. A stale socket (nobody answers) is replaced; a live one is an
// error, as is any other file in its place.
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
	dirPerm := fs.FileMode(0o700)
	if mode&0o070 != 0 {
		dirPerm = 0o750 // the group must reach a group-connectable socket
	}
	dir, err := config.OpenSocketDir(filepath.Dir(path), dirPerm)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	name := filepath.Base(path)
	if fi, err := dir.Lstat(name); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another agentbox daemon is listening at %s", path)
		}
		if err := dir.Remove(name); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	var rnd [5]byte // short: a socket path has at most 107 bytes
	rand.Read(rnd[:])
	tmpDir := ".agentbox-sock-" + hex.EncodeToString(rnd[:])
	if err := dir.Mkdir(tmpDir, 0o700); err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer dir.RemoveAll(tmpDir)
	if err := config.CheckRoot(dir); err != nil {
		return nil, err
	}
	// bind takes a path: check that it led into the directory checked.
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.Listen("unix", filepath.Join(filepath.Dir(path), tmp))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		ln.Close()
		return nil, err
	}
	if err := sameFile(dir, tmp, filepath.Join(filepath.Dir(path), tmp)); err != nil {
		return fail(err)
	}
	if err := dir.Chmod(tmp, fs.FileMode(mode)); err != nil {
		return fail(fmt.Errorf("socket mode: %w", err))
	}
	if err := dir.Rename(tmp, name); err != nil {
		return fail(fmt.Errorf("socket: %w", err))
	}
	if err := sameFile(dir, name, path); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(fmt.Errorf("socket: %w", err))
	}
	return &unixListener{UnixListener: ul, path: path, fi: fi}, nil
}

// sameFile checks that path names the entry name of the open directory dir.
func sameFile(dir *os.Root, name, path string) error {
	a, err := dir.Lstat(name)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	b, err := os.Lstat(path)
	if err != nil || !os.SameFile(a, b) {
		return &config.UnsafeDirError{Dir: filepath.Dir(path), Reason: "changed while the socket was bound"}
	}
	return nil
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

// Run serves on ln until ctx is done, then shuts down gracefully within the
// configured grace period (see Server.Shutdown).
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", time.Duration(s.cfg.Shutdown.Grace))
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.cfg.Shutdown.Grace))
	defer cancel()
	err := s.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, syscall.EINVAL) && err == nil {
		err = serr
	}
	return err
}
