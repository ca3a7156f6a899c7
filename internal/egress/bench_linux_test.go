package egress_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
)

// The proxy's cost against going straight to the origin, on the same veth pair:
// latency of a small request over a kept-alive client connection, and throughput of
// a 16 MiB body. Client, proxy and origin all run in this process, so cpu-ns/op
// (the process's CPU time per request, from getrusage) is the whole cost of a
// request with and without the proxy, and holds on a loaded machine where wall
// time does not.
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/egress/
func BenchmarkEgress(b *testing.B) {
	f := newFixture(b)
	big := make([]byte, 16<<20)
	f.origin.Mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	f.origin.Mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	direct := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(f.host.Addr.String(), port))
		},
		TLSClientConfig: &tls.Config{RootCAs: f.origin.Roots},
	}
	b.Cleanup(direct.CloseIdleConnections)
	clients := map[string]*http.Client{"direct": {Transport: direct}, "proxy": f.client(b, f.origin.Roots)}
	for _, path := range []string{"/small", "/big"} {
		for _, scheme := range []string{"http", "https"} {
			for _, via := range []string{"direct", "proxy"} {
				url := f.httpURL(originName, path)
				if scheme == "https" {
					url = f.httpsURL(originName, path)
				}
				name := map[string]string{"/small": "latency", "/big": "throughput"}[path]
				b.Run(name+"/"+scheme+"/"+via, func(b *testing.B) {
					c := clients[via]
					if path == "/big" {
						b.SetBytes(int64(len(big)))
					}
					before := cpuTime()
					for b.Loop() {
						resp, err := c.Get(url)
						if err != nil {
							b.Fatal(err)
						}
						n, _ := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 || n == 0 || strings.HasSuffix(url, "/big") && n != int64(len(big)) {
							b.Fatalf("%s: %d, %d bytes", url, resp.StatusCode, n)
						}
					}
					b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkEgressScan is the cost of Scan: a POST of a 4 KiB and of a 512 KiB body
// (source text, no secret) through a proxy that scans and one that does not, over
// plain HTTP and HTTPS (scanning intercepts every tunnel: a TLS termination more
// per connection, and the body read whole before it is sent).
//
//	go test -run '^$' -bench EgressScan -benchtime 2s ./internal/egress/
func BenchmarkEgressScan(b *testing.B) {
	line := "func handler(w http.ResponseWriter, r *http.Request) { io.WriteString(w, \"ok\") } // 0123456789\n"
	bodies := map[string]string{"4k": strings.Repeat(line, 4<<10/len(line)), "512k": strings.Repeat(line, 512<<10/len(line))}
	for _, mode := range []string{"off", "scan"} {
		f := newFixture(b, withPolicy(func(p *egress.Policy) { p.Scan.On = mode == "scan" }))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(f.origin.CAPEM)
		pool.AppendCertsFromPEM(f.proxy.CACertPEM())
		c := f.client(b, pool)
		for _, size := range []string{"4k", "512k"} {
			for _, scheme := range []string{"http", "https"} {
				url := f.httpURL(originName, "/up")
				if scheme == "https" {
					url = f.httpsURL(originName, "/up")
				}
				b.Run("upload"+size+"/"+scheme+"/"+mode, func(b *testing.B) {
					b.SetBytes(int64(len(bodies[size])))
					before := cpuTime()
					for b.Loop() {
						resp, err := c.Post(url, "text/plain", strings.NewReader(bodies[size]))
						if err != nil {
							b.Fatal(err)
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							b.Fatalf("%s: %d", url, resp.StatusCode)
						}
						f.origin.Forget()
					}
					b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}
