package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
)

// TestAllowedReached: an allowed name is reached both ways, plain HTTP (absolute
// URI) and HTTPS through CONNECT, end to end with the origin's own certificate, and
// each connection is logged with its address and bytes.
func TestAllowedReached(t *testing.T) {
	var streamed []egress.Event // OnEvent runs under the log's lock: no mutex needed
	f := newFixture(t, func(_ *fixture, c *egress.Config) {
		c.OnEvent = func(e egress.Event) { streamed = append(streamed, e) }
	})
	c := f.client(t, f.origin.Roots)
	for _, url := range []string{f.httpURL(originName, "/plain"), f.httpsURL(originName, "/tls")} {
		code, body := f.get(t, c, url)
		if code != http.StatusOK || !strings.HasPrefix(body, "origin "+originName) {
			t.Fatalf("GET %s: %d %q", url, code, body)
		}
	}
	reqs := f.origin.Requests()
	if len(reqs) != 2 || reqs[0].TLS || !reqs[1].TLS || reqs[1].SNI != originName {
		t.Fatalf("origin saw %+v", reqs)
	}
	f.proxy.Close() // ends the tunnel, which logs it
	var protos []string
	for _, e := range f.proxy.Log() {
		if e.Decision != egress.Allowed || e.Host != originName || e.Addr != f.host.Addr || e.BytesUp == 0 || e.BytesDown == 0 {
			t.Errorf("event %+v", e)
		}
		protos = append(protos, e.Proto)
	}
	if strings.Join(protos, ",") != "http,connect" {
		t.Errorf("protos %v", protos)
	}
	if fmt.Sprint(streamed) != fmt.Sprint(f.proxy.Log()) {
		t.Errorf("OnEvent saw %+v, Log holds %+v", streamed, f.proxy.Log())
	}
}

// TestOtherNameRefused: a name outside the allowlist is refused both ways: a peer
// filtered CONNECT but let plain HTTP through unchecked.
func TestOtherNameRefused(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.origin.Roots)
	code, body := f.get(t, c, f.httpURL(otherName, "/"))
	if code != http.StatusForbidden || !strings.Contains(body, "not_allowed") {
		t.Errorf("plain: %d %q", code, body)
	}
	if e := f.last(t); e.Decision != egress.Denied || e.Reason != egress.ReasonNotAllowed || e.Host != otherName || e.Proto != "http" {
		t.Errorf("event %+v", e)
	}
	if _, code := f.tunnel(t, hostPort(otherName, f.origin.HTTPS.Port())); code != http.StatusForbidden {
		t.Errorf("CONNECT: %d", code)
	}
	if code, body := f.get(t, c, f.httpsURL(otherName, "/")); code != 0 || !strings.Contains(body, "Forbidden") {
		t.Errorf("https through the client: %d %q", code, body)
	}
	if e := f.last(t); e.Reason != egress.ReasonNotAllowed || e.Proto != "connect" {
		t.Errorf("event %+v", e)
	}
	if reqs := f.origin.Requests(); len(reqs) != 0 {
		t.Fatalf("origin reached: %+v", reqs)
	}
}

// TestEmptyAllowlistRefusesAll: no pattern means nothing is reached (a peer's
// empty allowlist meant "allow all").
func TestEmptyAllowlistRefusesAll(t *testing.T) {
	f := newFixture(t, withPolicy(func(p *egress.Policy) { p.Allow = nil }))
	c := f.client(t, f.origin.Roots)
	for _, name := range []string{originName, otherName, secretName} {
		if code, _ := f.get(t, c, f.httpURL(name, "/")); code != http.StatusForbidden {
			t.Errorf("plain %s: %d", name, code)
		}
		if _, code := f.tunnel(t, hostPort(name, f.origin.HTTPS.Port())); code != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d", name, code)
		}
	}
	if reqs := f.origin.Requests(); len(reqs) != 0 {
		t.Fatalf("origin reached: %+v", reqs)
	}
}

// TestAllowPrivate: the test host's address is special-purpose (198.18.0.0/15), so
// without AllowPrivate the allowed name is refused at the address check.
func TestAllowPrivate(t *testing.T) {
	f := newFixture(t, withPolicy(func(p *egress.Policy) { p.AllowPrivate = nil }))
	code, body := f.get(t, f.client(t, f.origin.Roots), f.httpURL(originName, "/"))
	if code != http.StatusForbidden || !strings.Contains(body, "benchmarking") {
		t.Fatalf("%d %q", code, body)
	}
	if e := f.last(t); e.Reason != egress.ReasonAddressRefused || e.Addr != f.host.Addr {
		t.Fatalf("event %+v", e)
	}
}

// TestHostMismatch: plain HTTP is judged by the absolute URI, and the Host header
// must name the same host and port; inside CONNECT the Host header, if any, too.
func TestHostMismatch(t *testing.T) {
	f := newFixture(t)
	p := strconv.Itoa(int(f.origin.HTTP.Port()))
	origin, other := originName+":"+p, otherName+":"+p
	for _, tc := range []struct {
		name, req string
		code      int
		reason    egress.Reason
	}{
		{"Host names another host", "GET http://" + origin + "/ HTTP/1.1\r\nHost: " + other + "\r\n\r\n", 403, egress.ReasonHostMismatch},
		{"URI names another host", "GET http://" + other + "/ HTTP/1.1\r\nHost: " + origin + "\r\n\r\n", 403, egress.ReasonHostMismatch},
		{"Host lacks the port", "GET http://" + origin + "/ HTTP/1.1\r\nHost: " + originName + "\r\n\r\n", 403, egress.ReasonHostMismatch},
		{"no Host", "GET http://" + origin + "/ HTTP/1.1\r\n\r\n", 403, egress.ReasonHostMismatch},
		{"two Hosts", "GET http://" + origin + "/ HTTP/1.1\r\nHost: " + origin + "\r\nHost: " + other + "\r\n\r\n", 400, egress.ReasonBadRequest},
		{"origin-form", "GET / HTTP/1.1\r\nHost: " + origin + "\r\n\r\n", 400, egress.ReasonBadRequest},
		{"https absolute URI", "GET https://" + origin + "/ HTTP/1.1\r\nHost: " + origin + "\r\n\r\n", 400, egress.ReasonBadRequest},
		{"userinfo", "GET http://" + origin + "@" + other + "/ HTTP/1.1\r\nHost: " + other + "\r\n\r\n", 400, egress.ReasonBadRequest},
		{"CONNECT Host names another", "CONNECT " + origin + " HTTP/1.1\r\nHost: " + other + "\r\n\r\n", 403, egress.ReasonHostMismatch},
		{"CONNECT without port", "CONNECT " + originName + " HTTP/1.1\r\n\r\n", 400, egress.ReasonBadRequest},
		{"CONNECT userinfo", "CONNECT " + originName + "@" + other + " HTTP/1.1\r\n\r\n", 400, egress.ReasonBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.raw(t, tc.req)
			if code != tc.code || !strings.Contains(body, string(tc.reason)) {
				t.Fatalf("%d %q; want %d %s", code, body, tc.code, tc.reason)
			}
			if e := f.last(t); e.Reason != tc.reason || e.Decision != egress.Denied {
				t.Fatalf("event %+v", e)
			}
		})
	}
	if reqs := f.origin.Requests(); len(reqs) != 0 {
		t.Fatalf("origin reached: %+v", reqs)
	}
	// The matching request goes through.
	if code, body := f.raw(t, "GET http://"+origin+"/ok HTTP/1.1\r\nHost: "+strings.ToUpper(originName)+".:"+p+"\r\n\r\n"); code != 200 {
		t.Fatalf("agreeing request: %d %q", code, body)
	}
}

// TestTunnelChecks: a tunnel must begin with a TLS ClientHello naming the CONNECT
// host, or no byte reaches the destination: a mismatched SNI (domain fronting), no
// SNI, plain HTTP inside the tunnel (a Host the proxy would never see), a CONNECT
// inside the tunnel (an in-sandbox relay chaining proxies).
func TestTunnelChecks(t *testing.T) {
	f := newFixture(t)
	tlsTarget := hostPort(originName, f.origin.HTTPS.Port())
	httpTarget := hostPort(originName, f.origin.HTTP.Port())
	for _, tc := range []struct {
		name, target string
		send         func(net.Conn) error
		reason       egress.Reason
	}{
		{"SNI names another host", tlsTarget, handshake(otherName), egress.ReasonSNIMismatch},
		{"SNI with a NUL", tlsTarget, handshake(originName + "\x00." + otherName), egress.ReasonSNIMismatch},
		{"no SNI", tlsTarget, handshake(""), egress.ReasonNoSNI},
		{"plain HTTP inside", httpTarget, write("GET / HTTP/1.1\r\nHost: " + otherName + "\r\n\r\n"), egress.ReasonNotTLS},
		{"CONNECT inside", tlsTarget, write("CONNECT " + hostPort(otherName, 443) + " HTTP/1.1\r\n\r\n"), egress.ReasonNotTLS},
		{"garbage", tlsTarget, write("\x16\x03\x01\xff\xffjunk"), egress.ReasonNotTLS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, code := f.tunnel(t, tc.target)
			if code != http.StatusOK {
				t.Fatalf("CONNECT: %d", code)
			}
			tc.send(c)
			c.Close()
			e := f.waitEvent(t, func(e egress.Event) bool { return e.Reason == tc.reason })
			if e.Decision != egress.Denied || e.BytesUp != 0 {
				t.Fatalf("event %+v", e)
			}
		})
	}
	if reqs := f.origin.Requests(); len(reqs) != 0 {
		t.Fatalf("origin reached: %+v", reqs)
	}
}

func handshake(sni string) func(net.Conn) error {
	return func(c net.Conn) error {
		return tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
	}
}

func write(s string) func(net.Conn) error {
	return func(c net.Conn) error {
		_, err := c.Write([]byte(s))
		c.Read(make([]byte, 1)) // until the proxy closes
		return err
	}
}

// TestHostForms: hosts written to slip past a matcher. Trailing dots and case are
// the same name; NUL, CR/LF and separators are refused; every IP spelling is an IP
// (refused even for the test host's own address, which AllowPrivate opens);
// punycode and Unicode are one name.
func TestHostForms(t *testing.T) {
	f := newFixture(t, withPolicy(func(p *egress.Policy) {
		p.Allow = append(p.Allow, "bücher.test")
		p.DNSOverride["xn--bcher-kva.test"] = p.DNSOverride[originName]
	}))
	port := strconv.Itoa(int(f.origin.HTTP.Port()))
	a4 := f.host.Addr.As4()
	u := uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8 | uint32(a4[3])
	get := func(host string) string {
		return "GET http://" + host + ":" + port + "/ HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n\r\n"
	}
	connect := func(host string) string {
		return "CONNECT " + host + ":" + port + " HTTP/1.1\r\n\r\n"
	}
	for _, tc := range []struct {
		host   string
		reason egress.Reason // "" when reached
	}{
		{originName + ".", ""},
		{"ORIGIN.Test", ""},
		{"xn--bcher-kva.test", ""},
		{originName + "..", egress.ReasonBadHost},
		{otherName + ".", egress.ReasonNotAllowed},
		{"xn--bcher-kvb.test", egress.ReasonBadHost},
		{originName + "%00." + otherName, egress.ReasonBadRequest}, // net/url refuses it
		{"evil_" + originName, egress.ReasonBadHost},
		{f.host.Addr.String(), egress.ReasonIPLiteral},
		{strconv.FormatUint(uint64(u), 10), egress.ReasonIPLiteral},
		{"0" + strconv.FormatUint(uint64(u), 8), egress.ReasonIPLiteral},
		{"0x" + strconv.FormatUint(uint64(u), 16), egress.ReasonIPLiteral},
		{strconv.Itoa(int(a4[0])) + "." + strconv.Itoa(int(a4[1])<<16|int(a4[2])<<8|int(a4[3])), egress.ReasonIPLiteral},
		{"[::ffff:" + f.host.Addr.String() + "]", egress.ReasonIPLiteral},
		{"2130706433", egress.ReasonIPLiteral},
		{"0177.0.0.1", egress.ReasonIPLiteral},
		{"0x7f.1", egress.ReasonIPLiteral},
		{"[::1]", egress.ReasonIPLiteral},
		{"0xa9fea9fe", egress.ReasonIPLiteral},
	} {
		for _, req := range []string{get(tc.host), connect(tc.host)} {
			code, body := f.raw(t, req)
			switch {
			case tc.reason == "" && strings.HasPrefix(req, "GET") && (code != 200 || !strings.Contains(body, "origin ")):
				t.Errorf("%q: %d %q; want reached", req, code, body)
			case tc.reason == "" && strings.HasPrefix(req, "CONNECT") && code != 200:
				t.Errorf("%q: %d %q; want 200", req, code, body)
			case tc.reason != "" && (code < 400 || !strings.Contains(body, string(tc.reason))):
				t.Errorf("%q: %d %q; want %s", req, code, body, tc.reason)
			}
		}
	}
	// Raw bytes in the request line: net/http refuses most before the proxy sees a
	// host; whatever refuses them, the origin must not be reached.
	before := len(f.origin.Requests())
	for _, host := range []string{originName + "\x00." + otherName, otherName + "\x00." + originName, originName + "\r\nX: y", "bücher.test"} {
		for _, req := range []string{get(host), connect(host)} {
			if code, body := f.raw(t, req); code < 400 && !strings.Contains(host, "bücher") {
				t.Errorf("%q: %d %q", req, code, body)
			}
		}
	}
	for _, r := range f.origin.Requests()[before:] {
		if r.Host != "xn--bcher-kva.test:"+port {
			t.Errorf("origin reached by %+v", r)
		}
	}
}

// TestRebinding: the proxy resolves each name once per connection, refuses the name
// if any answer is special-purpose (127.0.0.1, 169.254.169.254, their mapped
// forms), and connects to exactly the address it checked: a resolver that answers
// the test host first and loopback after cannot move a checked connection.
func TestRebinding(t *testing.T) {
	loop, err := net.Listen("tcp", "127.0.0.1:0") // a service on the host's loopback
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	hits := make(chan struct{}, 10)
	go func() {
		for {
			c, err := loop.Accept()
			if err != nil {
				return
			}
			hits <- struct{}{}
			c.Close()
		}
	}()
	loopPort := uint16(loop.Addr().(*net.TCPAddr).Port)
	lo := netip.MustParseAddr("127.0.0.1")
	res := &scriptedResolver{}
	f := newFixture(t, func(f *fixture, c *egress.Config) {
		c.Resolver = res
		c.Policy.Allow = []string{"rebind.test", "meta.test", "mixed.test", "mapped.test"}
		c.Policy.DNSOverride = nil
		// Opening loopback and link-local changes nothing: they are never opened.
		c.Policy.AllowPrivate = append(c.Policy.AllowPrivate, netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"))
		res.answers = map[string][][]netip.Addr{
			"rebind.test": {{f.host.Addr}, {lo}},
			"meta.test":   {{netip.MustParseAddr("169.254.169.254")}},
			"mixed.test":  {{f.host.Addr, lo}},
			"mapped.test": {{netip.MustParseAddr("::ffff:127.0.0.1")}},
		}
	})
	// First answer: the test host, reached; the second resolution would say
	// loopback, but the connection never asks again.
	code, body := f.raw(t, "GET http://rebind.test:"+strconv.Itoa(int(f.origin.HTTP.Port()))+"/ HTTP/1.1\r\nHost: rebind.test:"+strconv.Itoa(int(f.origin.HTTP.Port()))+"\r\n\r\n")
	if code != 200 || res.calls("rebind.test") != 1 {
		t.Fatalf("first: %d %q, %d lookups", code, body, res.calls("rebind.test"))
	}
	// An allowed request is logged when it ends, just after the client has its answer.
	if e := f.waitEvent(t, func(e egress.Event) bool { return e.Host == "rebind.test" }); e.Decision != egress.Allowed || e.Addr != f.host.Addr {
		t.Fatalf("first: %+v", e)
	}
	for _, name := range []string{"rebind.test", "meta.test", "mixed.test", "mapped.test"} {
		for _, req := range []string{
			"GET http://" + name + ":" + strconv.Itoa(int(loopPort)) + "/ HTTP/1.1\r\nHost: " + name + ":" + strconv.Itoa(int(loopPort)) + "\r\n\r\n",
			"CONNECT " + name + ":" + strconv.Itoa(int(loopPort)) + " HTTP/1.1\r\n\r\n",
		} {
			code, body := f.raw(t, req)
			if code != 403 || !strings.Contains(body, "address_refused") {
				t.Errorf("%s: %d %q", name, code, body)
			}
		}
	}
	select {
	case <-hits:
		t.Fatal("the loopback service was reached")
	default:
	}
}

// scriptedResolver answers each name from a script, one entry per lookup, the last
// entry repeating.
type scriptedResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	n       map[string]int
}

func (r *scriptedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	script := r.answers[host]
	if len(script) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.n[host], len(script)-1)
	r.n[host]++
	return append([]netip.Addr(nil), script[i]...), nil
}

func (r *scriptedResolver) calls(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[host]
}

// TestStreaming: a response that trickles (server-sent events, a long poll) is passed
// on as it comes: the client reads the first part while the origin still holds the
// rest back until the client has it.
func TestStreaming(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	f.origin.Mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "second\n")
	})
	resp, err := f.client(t, nil).Get(f.httpURL(originName, "/stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n') // the client's 20 s timeout fails it if held back
	close(release)
	if err != nil || line != "first\n" {
		t.Fatalf("first part: %q, %v", line, err)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "second\n" {
		t.Fatalf("rest: %q", rest)
	}
}

// TestPlainKeepAlive: consecutive plain requests from one client connection to one
// host share one upstream connection (apt and pip send many), yet each is checked and
// logged on its own; a request to another host gets its own connection, and so does
// one after the destination closed the kept connection without saying so.
func TestPlainKeepAlive(t *testing.T) {
	f := newFixture(t, withPolicy(func(p *egress.Policy) { p.Allow = []string{originName, otherName} }))
	vanished := make(chan struct{}, 1)
	f.origin.Mux.HandleFunc("/vanish", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") // as if to keep it
		conn.Close()
		vanished <- struct{}{}
	})
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, step := range []string{originName + "/0", originName + "/1", otherName + "/2", otherName + "/vanish", otherName + "/4"} {
		name, path, _ := strings.Cut(step, "/")
		hp := hostPort(name, f.origin.HTTP.Port())
		io.WriteString(c, "GET http://"+hp+"/"+path+" HTTP/1.1\r\nHost: "+hp+"\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if path == "vanish" {
			<-vanished
		}
	}
	reqs := f.origin.Requests()
	var remotes []string
	for _, r := range reqs {
		remotes = append(remotes, r.Remote)
	}
	if len(reqs) != 5 || remotes[0] != remotes[1] || remotes[1] == remotes[2] || remotes[2] != remotes[3] || remotes[3] == remotes[4] {
		t.Fatalf("origin connections: %v", remotes)
	}
	c.Close()
	f.proxy.Close() // every request is logged once its connection is done
	log := f.proxy.Log()
	if len(log) != 5 {
		t.Fatalf("%d events", len(log))
	}
	for _, e := range log {
		if e.Decision != egress.Allowed || e.BytesUp == 0 || e.BytesDown == 0 || e.Addr != f.host.Addr {
			t.Errorf("event %+v", e)
		}
	}
}
