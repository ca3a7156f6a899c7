package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// FuzzProxyRequest feeds arbitrary bytes to a proxy whose only allowed name is
// allowed.test and whose resolver answers a public address for every other name. A
// parser differential (a Host header read one way, the target another) would show
// as a dial to that address or a request upstream that names another host.
func FuzzProxyRequest(f *testing.F) {
	for _, s := range []string{
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test@other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n",
		"CONNECT other.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x00\x10",
		"GET http://ALLOWED.test.:80/ HTTP/1.0\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test\x00.other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	allowed := netip.MustParseAddr("10.9.9.9")
	public := netip.MustParseAddr("93.184.216.34")
	f.Fuzz(func(t *testing.T, data []byte) {
		var mu sync.Mutex
		var bad []string
		var wg sync.WaitGroup
		p, err := NewProxy(Config{
			Policy: Policy{Allow: []string{"allowed.test"}, AllowPrivate: []netip.Prefix{netip.PrefixFrom(allowed, 32)},
				DNSOverride: map[string]netip.Addr{"allowed.test": allowed}},
			Resolver:         resolverFunc(func(string) []netip.Addr { return []netip.Addr{public} }),
			HandshakeTimeout: 20 * time.Millisecond,
			IdleTimeout:      20 * time.Millisecond,
			Dial: func(_ context.Context, a netip.AddrPort) (net.Conn, error) {
				if a.Addr() != allowed {
					mu.Lock()
					bad = append(bad, "dialled "+a.String())
					mu.Unlock()
				}
				c, s := net.Pipe()
				wg.Add(1)
				go func() { // the destination: what reaches it must name allowed.test
					defer wg.Done()
					defer s.Close()
					s.SetDeadline(time.Now().Add(time.Second))
					br := bufio.NewReader(s)
					for {
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						if h, _, _, _ := target(req.Host, 80); h != "allowed.test" {
							mu.Lock()
							bad = append(bad, "upstream request for "+req.Host)
							mu.Unlock()
						}
						io.Copy(io.Discard, req.Body)
						io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					}
				}()
				return c, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		client, server := net.Pipe()
		p.start(server)
		client.SetDeadline(time.Now().Add(100 * time.Millisecond))
		go func() { client.Write(data) }()
		io.Copy(io.Discard, client)
		client.Close()
		p.Close()
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("%q: %v", data, bad)
		}
	})
}

type resolverFunc func(host string) []netip.Addr

func (f resolverFunc) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f(host), nil
}
