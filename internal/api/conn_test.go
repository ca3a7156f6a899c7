package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
)

// serveTCP runs a server with the test configuration, changed by edit, on a
// loopback port through Serve (which httptest would bypass), and returns it with
// its base URL.
func serveTCP(t *testing.T, edit func(*config.Config)) (*Server, *memService, string) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(testConfig, t.TempDir())), "")
	if err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	mem := newMem()
	s, err := New(Options{Config: cfg, Service: mem})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-done
	})
	return s, mem, "http://" + ln.Addr().String()
}

// dial opens a raw connection that the test's cleanup closes (before the
// server's, which waits for connections).
func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSlowBodyIsCut guards issue 10's finding 14: an authenticated client that
// sent its headers and then a body one byte at a time held its connection (and
// a handler) for as long as it liked. The body now has limits.body_timeout to
// arrive: the server answers 408 and closes while the body is far from complete.
func TestSlowBodyIsCut(t *testing.T) {
	_, _, base := serveTCP(t, func(c *config.Config) { c.Limits.BodyTimeout = config.Duration(500 * time.Millisecond) })
	a, _ := client.New(client.Options{URL: base, Token: tokA})
	defer a.Close()
	e, err := a.Create(context.Background(), client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	const size = 1000 // at a byte per 100 ms: 100 s
	c := dial(t, base)
	fmt.Fprintf(c, "PUT /v1/environments/%s/files?path=slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", e.ID, tokA, size)
	var sent atomic.Int64
	go func() {
		for range size {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			sent.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a test that fails, not one that hangs
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body trickled in (%d of %d bytes sent): %v", sent.Load(), size, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"ETIMEDOUT"`) || sent.Load() >= size {
		t.Fatalf("%d %s after %d of %d bytes", resp.StatusCode, body, sent.Load(), size)
	}
	if b, err := a.ReadFile(context.Background(), e.ID, "slow", 0, 0); err == nil {
		t.Fatalf("a partial body was written: %q", b)
	}
}

// TestLongRequestsOutliveBodyTimeout: the body deadline ends with the body. An
// exec that takes longer than it, and an event stream that lasts longer, work.
func TestLongRequestsOutliveBodyTimeout(t *testing.T) {
	timeout := 200 * time.Millisecond
	_, mem, base := serveTCP(t, func(c *config.Config) { c.Limits.BodyTimeout = config.Duration(timeout) })
	a, _ := client.New(client.Options{URL: base, Token: tokA})
	defer a.Close()
	ctx := context.Background()
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	mem.mu.Lock()
	mem.execDelay = 5 * timeout
	mem.mu.Unlock()
	if res, err := a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"echo", "late"}}); err != nil || res.Stdout != "late\n" {
		t.Fatalf("exec longer than the body timeout: %+v %v", res, err)
	}
	proc, err := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"count", "4", (2 * timeout).String()}})
	if err != nil {
		t.Fatal(err)
	}
	st := a.Events(ctx, e.ID, proc, 0)
	n := 0
	for {
		_, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("event stream after %d events: %v", n, err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("%d events, want 4 lines and the exit", n)
	}
}

// TestConnectionCap: past limits.max_connections, a connection waits (in the
// kernel's backlog) until one of the served ones closes.
func TestConnectionCap(t *testing.T) {
	_, _, base := serveTCP(t, func(c *config.Config) { c.Limits.MaxConnections = 2 })
	get := func(c net.Conn, wait time.Duration) (*http.Response, error) {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.ReadAll(resp.Body)
		}
		return resp, err
	}
	held := []net.Conn{dial(t, base), dial(t, base)}
	for _, c := range held {
		if _, err := get(c, 10*time.Second); err != nil { // served, then kept alive
			t.Fatal(err)
		}
	}
	third := dial(t, base)
	fmt.Fprintf(third, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	br := bufio.NewReader(third)
	if resp, err := http.ReadResponse(br, nil); err == nil {
		t.Fatalf("a third connection was served beyond the cap of 2: %s", resp.Status)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after one closed, the waiting connection: %v %v", resp, err)
	}
}
