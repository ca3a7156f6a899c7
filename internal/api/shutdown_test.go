package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestGracefulShutdown: shutdown lets an in-flight request finish, ends event
// streams at once and refuses new connections; the environments are left to the
// Service.
func TestGracefulShutdown(t *testing.T) {
	cfg, err := config.Parse([]byte(fmt.Sprintf(testConfig, t.TempDir())), "")
	if err != nil {
		t.Fatal(err)
	}
	mem := newMem()
	mem.execHold, mem.execHeld = make(chan struct{}), make(chan struct{}, 1)
	s, err := New(Options{Config: cfg, Service: mem})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	c, _ := client.New(client.Options{URL: url, Token: tokA, Reconnects: 1, ReconnectDelay: time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	e, err := c.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	proc, err := c.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"stdin"}})
	if err != nil {
		t.Fatal(err)
	}
	// An event stream that would never end by itself.
	req, _ := http.NewRequest("GET", url+"/v1/environments/"+e.ID+"/processes/"+proc+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	streamEnded := make(chan struct{})
	go func() { io.Copy(io.Discard, resp.Body); close(streamEnded) }()
	// A synchronous exec, held in flight until the stream has ended.
	execDone := make(chan error, 1)
	go func() {
		res, err := c.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"echo", "done"}})
		if err == nil && res.Stdout != "done\n" {
			err = fmt.Errorf("stdout %q", res.Stdout)
		}
		execDone <- err
	}()
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatal(what)
		}
	}
	wait(mem.execHeld, "the exec never reached the service")
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(sctx) }()
	// At once: while a request is still in flight, so Shutdown cannot have
	// returned yet.
	wait(streamEnded, "the event stream did not end while a request was in flight")
	select {
	case err := <-shutdown:
		t.Fatalf("shutdown returned before the in-flight exec finished: %v", err)
	default:
	}
	close(mem.execHold)
	if err := <-shutdown; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-execDone; err != nil {
		t.Fatalf("the in-flight exec did not finish: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("still accepting connections")
	}
	// The environments are the Service's to keep or destroy when it closes.
	envs, _ := mem.List(ctx, envOwner("a"), nil)
	if len(envs) != 1 {
		t.Fatalf("%d environments after shutdown, want the 1 the Service holds", len(envs))
	}
}

func TestListenUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "agentbox.sock")
	for _, mode := range []string{"0600", "0660"} {
		t.Run(mode, func(t *testing.T) {
			cfg := config.Local("local-token-0123456789")
			cfg.Socket, cfg.SocketMode = sock, mode
			ln, err := Listen(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(sock)
			if err != nil || fi.Mode()&os.ModeSocket == 0 || fmt.Sprintf("%04o", fi.Mode().Perm()) != mode {
				t.Fatalf("socket %v %v, want mode %s", fi.Mode(), err, mode)
			}
			entries, _ := os.ReadDir(filepath.Dir(sock))
			if len(entries) != 1 {
				t.Fatalf("left behind: %v", entries)
			}
			// A second daemon on the same socket is refused while the first runs.
			if _, err := Listen(cfg); err == nil {
				t.Fatal("a live socket was replaced")
			}
			ln.Close()
			if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("socket not removed on close: %v", err)
			}
		})
	}
	t.Run("stale socket is replaced", func(t *testing.T) {
		cfg := config.Local("local-token-0123456789")
		cfg.Socket = sock
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close() // the file stays, nobody listens: a crashed daemon's socket
		ln, err := Listen(cfg)
		if err != nil {
			t.Fatalf("stale socket: %v", err)
		}
		ln.Close()
	})
	// Issue 10, finding 8: another user who made the socket's directory first
	// could swap the socket. Such a directory is refused and nothing is bound.
	t.Run("a directory another user could write in is refused", func(t *testing.T) {
		testenv.RequireRoot(t) // to give it to another uid
		for name, mk := range map[string]func(string) error{
			"owned by uid 12345": func(d string) error { return os.Chown(d, 12345, 12345) },
			"mode 0777":          func(d string) error { return os.Chmod(d, 0o777) },
		} {
			top, err := os.MkdirTemp("", "ab") // short: a socket path has at most 107 bytes
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(top)
			d := filepath.Join(top, "agentbox-1000")
			os.Mkdir(d, 0o700)
			if err := mk(d); err != nil {
				t.Fatal(err)
			}
			cfg := config.Local("local-token-0123456789")
			cfg.Socket = filepath.Join(d, "agentbox.sock")
			ln, err := Listen(cfg)
			if err == nil {
				ln.Close()
				t.Fatalf("%s: listened in it", name)
			}
			if !errors.Is(err, config.ErrUnsafeDir) || !strings.Contains(err.Error(), d) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s: err = %v, want one naming the directory and why", name, err)
			}
			if entries, _ := os.ReadDir(d); len(entries) != 0 {
				t.Fatalf("%s: left %v in it", name, entries)
			}
		}
	})
	t.Run("a regular file is not removed", func(t *testing.T) {
		cfg := config.Local("local-token-0123456789")
		cfg.Socket = sock
		os.WriteFile(sock, []byte("keep"), 0o644)
		defer os.Remove(sock)
		if _, err := Listen(cfg); err == nil {
			t.Fatal("listened over a regular file")
		}
		if b, _ := os.ReadFile(sock); string(b) != "keep" {
			t.Fatal("the file was touched")
		}
	})
}

// TestRunOverUnixSocket: the client reaches a server on a Unix socket, and a
// missing daemon is a NoDaemonError naming the socket.
func TestRunOverUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "a.sock")
	cfg := config.Local("local-token-0123456789")
	cfg.Socket = sock
	c, _ := client.New(client.Options{Socket: sock, Token: "local-token-0123456789"})
	defer c.Close()
	err := c.Health(context.Background())
	var nd *client.NoDaemonError
	if !errors.As(err, &nd) || !errors.Is(err, client.ErrNoDaemon) ||
		err.Error() != "no agentbox daemon at "+sock+": start one with `agentbox serve`" {
		t.Fatalf("no daemon: %v", err)
	}
	ln, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Service: newMem(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	e, err := c.Create(context.Background(), client.CreateRequest{Preset: "t"})
	if err != nil || e.Owner.Tenant != "local" {
		t.Fatalf("create over the socket: %+v %v", e, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}
