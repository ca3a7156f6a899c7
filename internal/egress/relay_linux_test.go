package egress_test

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
)

// TestRelay: the proposed bridge end to end — the proxy serves a Unix socket, a
// Relay forwards a loopback port to it — carries allowed requests and every
// refusal exactly as a direct client gets them. An in-sandbox relay (a peer's
// allowlist fell to one forwarding CONNECTs) is just another client.
func TestRelay(t *testing.T) {
	f := newFixture(t)
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.proxy.Serve(ul) }()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relayed := make(chan error, 1)
	go func() {
		relayed <- egress.Relay(tl, func() (net.Conn, error) { return net.Dial("unix", sock) })
	}()
	viaRelay := &fixture{host: f.host, origin: f.origin, proxy: f.proxy, addr: tl.Addr().String()}
	c := viaRelay.client(t, f.origin.Roots)
	if code, body := viaRelay.get(t, c, f.httpsURL(originName, "/")); code != http.StatusOK {
		t.Errorf("allowed over the relay: %d %q", code, body)
	}
	if code, _ := viaRelay.get(t, c, f.httpURL(otherName, "/")); code != http.StatusForbidden {
		t.Errorf("other name, plain, over the relay: %d", code)
	}
	if _, code := viaRelay.tunnel(t, hostPort(otherName, f.origin.HTTPS.Port())); code != http.StatusForbidden {
		t.Errorf("other name, CONNECT, over the relay: %d", code)
	}
	inner, code := viaRelay.tunnel(t, hostPort(originName, f.origin.HTTPS.Port()))
	if code != http.StatusOK {
		t.Fatalf("CONNECT over the relay: %d", code)
	}
	write("CONNECT " + hostPort(otherName, f.origin.HTTPS.Port()) + " HTTP/1.1\r\n\r\n")(inner)
	inner.Close()
	f.waitEvent(t, func(e egress.Event) bool { return e.Reason == egress.ReasonNotTLS })
	tl.Close()
	if err := <-relayed; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Relay returned %v", err)
	}
	f.proxy.Close()
	if err := <-served; !errors.Is(err, egress.ErrClosed) {
		t.Errorf("Serve returned %v", err)
	}
	for _, r := range f.origin.Requests() {
		if !strings.HasPrefix(r.Host, originName) {
			t.Errorf("origin reached as %s", r.Host)
		}
	}
	// Relay's copies splice(2) through pipes that the runtime pools; two collections
	// empty the pool, and the pipes' finalizers close them before the leak check.
	runtime.GC()
	runtime.GC()
}

// TestProxyItself: a request through the proxy to the proxy — its own listener as
// the destination — is refused, so nesting gains a sandbox nothing even where a
// listener has an address the policy opens.
func TestProxyItself(t *testing.T) {
	f := newFixture(t, func(f *fixture, c *egress.Config) {
		c.Policy.Allow = append(c.Policy.Allow, "self.test", "loop.test")
		c.Policy.DNSOverride["self.test"] = f.host.Peer // the test's end of the veth pair
		c.Policy.DNSOverride["loop.test"] = netip.MustParseAddr("127.0.0.1")
	})
	self := serve(t, f.proxy, net.JoinHostPort(f.host.Peer.String(), "0"))
	_, port, _ := net.SplitHostPort(self)
	_, loopPort, _ := net.SplitHostPort(f.addr)
	for _, tc := range []struct {
		target string
		reason egress.Reason
	}{
		{"self.test:" + port, egress.ReasonProxyItself},
		{"loop.test:" + loopPort, egress.ReasonAddressRefused},
	} {
		for _, req := range []string{
			"CONNECT " + tc.target + " HTTP/1.1\r\n\r\n",
			"GET http://" + tc.target + "/ HTTP/1.1\r\nHost: " + tc.target + "\r\n\r\n",
		} {
			if code, body := f.raw(t, req); code != http.StatusForbidden || !strings.Contains(body, string(tc.reason)) {
				t.Errorf("%q: %d %q", req, code, body)
			}
		}
	}
	// The same proxy through its veth listener still serves the origin.
	u, _ := url.Parse("http://" + self)
	tr := &http.Transport{Proxy: http.ProxyURL(u)}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(f.httpURL(originName, "/"))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("through the veth listener: %v %v", resp, err)
	}
	resp.Body.Close()
}
