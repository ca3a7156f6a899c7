package egress

import (
	"crypto/x509"
	"strconv"
	"testing"
	"time"
)

// TestAuthority: a leaf for the host, chaining to the exported CA, short-lived, and
// a cache a wildcard secret host cannot grow without bound.
func TestAuthority(t *testing.T) {
	a, err := newAuthority(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.pem) {
		t.Fatal("CA PEM does not parse")
	}
	c, err := a.leaf("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: "api.example.com", Roots: pool}); err != nil {
		t.Fatalf("leaf does not verify: %v", err)
	}
	if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: pool}); err == nil {
		t.Fatal("leaf verifies for another name")
	}
	if c.Leaf.NotAfter.After(a.cert.NotAfter) || !a.cert.IsCA || a.cert.MaxPathLen != 0 || !a.cert.MaxPathLenZero {
		t.Fatalf("leaf until %v, CA until %v, CA constraints %v %d", c.Leaf.NotAfter, a.cert.NotAfter, a.cert.IsCA, a.cert.MaxPathLen)
	}
	if again, _ := a.leaf("api.example.com"); again != c {
		t.Fatal("leaf not cached")
	}
	for i := range maxLeaves + 10 {
		if _, err := a.leaf("h" + strconv.Itoa(i) + ".example.com"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.leaves); n > maxLeaves {
		t.Fatalf("%d leaves cached", n)
	}
}
