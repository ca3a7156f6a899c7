package egress_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
)

// openTLS opens a CONNECT tunnel to the origin's HTTPS port under name and makes one
// request over it, leaving it open.
func (f *fixture) openTLS(t *testing.T, name string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	return f.openTLSWith(t, name, f.origin.Roots)
}

func (f *fixture) openTLSWith(t *testing.T, name string, roots *x509.CertPool) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c, code := f.tunnel(t, hostPort(name, f.origin.HTTPS.Port()))
	if code != http.StatusOK {
		t.Fatalf("CONNECT %s: %d", name, code)
	}
	tc := tls.Client(c, &tls.Config{ServerName: name, RootCAs: roots})
	t.Cleanup(func() { tc.Close() })
	br := bufio.NewReader(tc)
	if code := request(t, tc, br, hostPort(name, f.origin.HTTPS.Port())); code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	return tc, br
}

// request sends GET / over an open connection and returns the status, 0 if the
// connection is gone.
func request(t *testing.T, w io.Writer, br *bufio.Reader, host string) int {
	t.Helper()
	if _, err := io.WriteString(w, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestLivePolicyChange: SetPolicy takes effect at once: a tunnel to a host the new
// policy drops is cut mid-connection, new connections are refused, a tunnel the new
// policy still allows lives on, and allowing the host again opens it again.
func TestLivePolicyChange(t *testing.T) {
	f := newFixture(t, withPolicy(func(p *egress.Policy) { p.Allow = []string{originName, otherName} }))
	dropped, droppedR := f.openTLS(t, originName)
	kept, keptR := f.openTLS(t, otherName)
	// A plain HTTP client connection, kept alive between requests.
	pc, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pr := bufio.NewReader(pc)
	plainURL := f.httpURL(originName, "/")
	plainHost := strings.TrimSuffix(strings.TrimPrefix(plainURL, "http://"), "/")
	plainGet := func() int {
		io.WriteString(pc, "GET "+plainURL+" HTTP/1.1\r\nHost: "+plainHost+"\r\n\r\n")
		resp, err := http.ReadResponse(pr, nil)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := plainGet(); code != 200 {
		t.Fatalf("plain before: %d", code)
	}

	if err := f.proxy.SetPolicy(f.policy(otherName)); err != nil {
		t.Fatal(err)
	}
	dropped.SetDeadline(time.Now().Add(10 * time.Second))
	if code := request(t, dropped, droppedR, originName); code != 0 {
		t.Errorf("the dropped host's tunnel still carries requests: %d", code)
	}
	f.waitEvent(t, func(e egress.Event) bool {
		return e.Host == originName && e.Proto == "connect" && e.Reason == egress.ReasonPolicyChanged && e.Decision == egress.Allowed
	})
	if code := request(t, kept, keptR, otherName); code != http.StatusOK {
		t.Errorf("the kept host's tunnel: %d", code)
	}
	// The plain client connection's upstream is cut with the tunnel (0) or its next
	// request refused (403); a new connection is refused.
	if code := plainGet(); code != http.StatusForbidden && code != 0 {
		t.Errorf("plain after, same client connection: %d", code)
	}
	if code, _ := f.get(t, f.client(t, nil), plainURL); code != http.StatusForbidden {
		t.Errorf("plain after, new connection: %d", code)
	}
	if _, code := f.tunnel(t, hostPort(originName, f.origin.HTTPS.Port())); code != http.StatusForbidden {
		t.Errorf("new tunnel after: %d", code)
	}

	if err := f.proxy.SetPolicy(f.policy(originName)); err != nil {
		t.Fatal(err)
	}
	if code, _ := f.get(t, f.client(t, f.origin.Roots), f.httpsURL(originName, "/")); code != http.StatusOK {
		t.Errorf("allowed again: %d", code)
	}
}

// TestInvalidPolicyFailsClosed: a reload that fails validation is not ignored (a
// peer's filter failed open when unrelated settings changed): the proxy refuses
// everything and cuts what is open until a valid policy comes.
func TestInvalidPolicyFailsClosed(t *testing.T) {
	f := newFixture(t)
	open, openR := f.openTLS(t, originName)
	bad := f.policy(originName, "exa mple.com")
	err := f.proxy.SetPolicy(bad)
	var pe *egress.PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("SetPolicy(invalid) = %v", err)
	}
	open.SetDeadline(time.Now().Add(10 * time.Second))
	if code := request(t, open, openR, originName); code != 0 {
		t.Errorf("open tunnel survived an invalid policy: %d", code)
	}
	code, body := f.get(t, f.client(t, f.origin.Roots), f.httpURL(originName, "/"))
	if code != http.StatusForbidden || !strings.Contains(body, "policy_invalid") {
		t.Errorf("after an invalid policy: %d %q", code, body)
	}
	if err := f.proxy.SetPolicy(f.policy(originName)); err != nil {
		t.Fatal(err)
	}
	if code, _ := f.get(t, f.client(t, f.origin.Roots), f.httpURL(originName, "/")); code != http.StatusOK {
		t.Errorf("after a valid policy again: %d", code)
	}
}

// TestProxyClosed: when the proxy goes, its tunnels go with it and nothing is
// served; there is no fallback path.
func TestProxyClosed(t *testing.T) {
	f := newFixture(t)
	open, openR := f.openTLS(t, originName)
	f.proxy.Close()
	open.SetDeadline(time.Now().Add(10 * time.Second))
	if code := request(t, open, openR, originName); code != 0 {
		t.Errorf("tunnel survived Close: %d", code)
	}
	if c, err := net.DialTimeout("tcp", f.addr, 2*time.Second); err == nil {
		c.Close()
		t.Error("the listener accepts after Close")
	}
	f.waitEvent(t, func(e egress.Event) bool { return e.Reason == egress.ReasonProxyClosed })
}

// TestLimits: MaxConns bounds the open client connections; MaxBytes bounds the
// bytes carried, exactly, cuts the connection that reaches it and refuses new ones.
func TestLimits(t *testing.T) {
	const limit = 100 << 10
	f := newFixture(t, withPolicy(func(p *egress.Policy) { p.Limits = egress.Limits{MaxConns: 2, MaxBytes: limit} }))
	f.origin.Mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 1<<20))
	})
	a, _ := f.openTLS(t, originName)
	b, _ := f.openTLS(t, originName)
	if _, code := f.tunnel(t, hostPort(originName, f.origin.HTTPS.Port())); code != http.StatusTooManyRequests {
		t.Errorf("third connection: %d", code)
	}
	f.waitEvent(t, func(e egress.Event) bool { return e.Reason == egress.ReasonConnLimit })
	a.Close()
	b.Close()
	f.waitEvent(t, func(e egress.Event) bool { return e.Proto == "connect" && e.Decision == egress.Allowed })

	var code int
	var body string
	for range 50 { // until the closed tunnels have left the count
		if code, body = f.get(t, f.client(t, nil), f.httpURL(originName, "/big")); code != http.StatusTooManyRequests {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code == http.StatusOK && len(body) >= 1<<20 {
		t.Fatalf("the whole megabyte came through a %d-byte limit", limit)
	}
	f.waitEvent(t, func(e egress.Event) bool { return e.Reason == egress.ReasonByteLimit && e.Decision == egress.Allowed })
	var total int64
	for _, e := range f.proxy.Log() {
		total += e.BytesUp + e.BytesDown
	}
	if total != limit {
		t.Errorf("carried %d bytes; limit %d", total, limit)
	}
	if code, body := f.get(t, f.client(t, nil), f.httpURL(originName, "/")); code != http.StatusTooManyRequests || !strings.Contains(body, "byte_limit") {
		t.Errorf("after the limit: %d %q", code, body)
	}
}
