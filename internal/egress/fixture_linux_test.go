package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/testenv/nethost"
)

// The names the test origin answers to; the proxy pins them to the test host.
const (
	originName = "origin.test"
	otherName  = "other.test"
	secretName = "api.test"
)

// fixture is a test host with an origin, and a proxy on the test's loopback that
// pins the origin's names to it and opens its /30 (AllowPrivate).
type fixture struct {
	host   *nethost.Host
	origin *nethost.Origin
	proxy  *egress.Proxy
	addr   string // the proxy's listener
}

// option edits the proxy's configuration once the test host is up.
type option func(*fixture, *egress.Config)

// withPolicy edits the fixture's policy.
func withPolicy(edit func(*egress.Policy)) option {
	return func(_ *fixture, c *egress.Config) { edit(&c.Policy) }
}

func newFixture(t testing.TB, opts ...option) *fixture {
	t.Helper()
	f := &fixture{host: nethost.New(t)}
	f.origin = nethost.StartOrigin(t, f.host, originName, otherName, secretName)
	cfg := egress.Config{Policy: f.policy(originName), UpstreamRoots: f.origin.Roots, DialTimeout: 5 * time.Second}
	for _, o := range opts {
		o(f, &cfg)
	}
	p, err := egress.NewProxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = p
	f.addr = serve(t, p, "127.0.0.1:0")
	return f
}

// policy allows the given patterns and pins every origin name to the test host.
func (f *fixture) policy(allow ...string) egress.Policy {
	a := f.host.Addr
	return egress.Policy{
		Allow:        allow,
		AllowPrivate: []netip.Prefix{f.host.Prefix},
		DNSOverride:  map[string]netip.Addr{originName: a, otherName: a, secretName: a},
	}
}

// serve runs p on a new listener at addr until the test ends, and returns the
// listener's address.
func serve(t testing.TB, p *egress.Proxy, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; !errors.Is(err, egress.ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return l.Addr().String()
}

// httpURL and httpsURL address the origin by name and port.
func (f *fixture) httpURL(name, path string) string {
	return "http://" + net.JoinHostPort(name, strconv.Itoa(int(f.origin.HTTP.Port()))) + path
}

func (f *fixture) httpsURL(name, path string) string {
	return "https://" + net.JoinHostPort(name, strconv.Itoa(int(f.origin.HTTPS.Port()))) + path
}

// client is an HTTP client that goes through the proxy and trusts roots.
func (f *fixture) client(t testing.TB, roots *x509.CertPool) *http.Client {
	t.Helper()
	proxy, _ := url.Parse("http://" + f.addr)
	tr := &http.Transport{
		Proxy:           http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// get fetches url through the proxy and returns the status and body.
func (f *fixture) get(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// raw sends request bytes to the proxy and returns the status of its answer.
func (f *fixture) raw(t testing.TB, request string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	if method == http.MethodConnect && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "" // a tunnel: its body is whatever comes next
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tunnel opens a CONNECT tunnel to target and returns the connection after a 200,
// or the status of the refusal.
func (f *fixture) tunnel(t testing.TB, target string) (net.Conn, int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, resp.StatusCode
	}
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: %d bytes after the 200", target, br.Buffered())
	}
	return c, resp.StatusCode
}

// last returns the proxy's newest event.
func (f *fixture) last(t testing.TB) egress.Event {
	t.Helper()
	log := f.proxy.Log()
	if len(log) == 0 {
		t.Fatal("no event logged")
	}
	return log[len(log)-1]
}

// waitEvent waits for an event that ok accepts (tunnels log when they end).
func (f *fixture) waitEvent(t testing.TB, ok func(egress.Event) bool) egress.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		for _, e := range f.proxy.Log() {
			if ok(e) {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no such event in %+v", f.proxy.Log())
	return egress.Event{}
}

func hostPort(name string, port uint16) string {
	return net.JoinHostPort(name, strconv.Itoa(int(port)))
}
