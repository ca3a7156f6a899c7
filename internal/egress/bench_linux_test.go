package egress_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
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
