package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/egress"
)

// TestBuildRefusals: a failed step's error names what its egress proxy refused,
// which the step's output (a bare 403) does not, and the --allow-private prefix
// that opens a refused mirror's address. A step whose proxy refused nothing, or
// that had no proxy, adds nothing.
func TestBuildRefusals(t *testing.T) {
	if got := refusals(nil); got != "" {
		t.Errorf("no proxy: %q, want none", got)
	}
	mirror := netip.MustParseAddr("10.9.8.7")
	proxy, err := egress.NewProxy(egress.Config{Policy: egress.Policy{
		Allow:       []string{"registry.example"},
		DNSOverride: map[string]netip.Addr{"registry.example": mirror},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	if got := refusals(proxy); got != "" {
		t.Errorf("nothing refused yet: %q, want none", got)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go proxy.Serve(l)
	for range 2 { // refused twice: named once
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT registry.example:443 HTTP/1.1\r\nHost: registry.example:443\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("the proxy tunnelled to %s, a private address", mirror)
		}
	}
	got := refusals(proxy)
	for _, want := range []string{"registry.example:443", string(egress.ReasonAddressRefused), "--allow-private 10.9.8.7/32"} {
		if !strings.Contains(got, want) {
			t.Errorf("refusals = %q, want it to name %q", got, want)
		}
	}
	if n := strings.Count(got, "registry.example:443"); n != 1 {
		t.Errorf("refusals names the refusal %d times, want once: %q", n, got)
	}
}
