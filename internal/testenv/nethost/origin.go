package nethost

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// Origin is an HTTP and an HTTPS server on a Host. Unless a test registers its own
// handler (Handle), every path answers "origin NAME PATH" where NAME is the Host
// header. It records every request it received.
type Origin struct {
	HTTP, HTTPS netip.AddrPort
	// Roots holds the test CA that signed the HTTPS server's certificate; CAPEM is
	// the same in PEM.
	Roots *x509.CertPool
	CAPEM []byte
	Mux   *http.ServeMux

	mu       sync.Mutex
	requests []Request
}

// Request is what the origin received.
type Request struct {
	Method, Host, Path, RawQuery string
	Remote                       string // the client's address and port
	Header, Trailer              http.Header
	Body                         []byte
	TLS                          bool
	SNI                          string
}

// StartOrigin serves on h until the test ends, with a certificate for names.
func StartOrigin(t testing.TB, h *Host, names ...string) *Origin {
	t.Helper()
	o := &Origin{Mux: http.NewServeMux()}
	o.Mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin %s %s", r.Host, r.URL.Path)
	})
	cert, err := o.testCA(names)
	if err != nil {
		t.Fatal(err)
	}
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Remote: r.RemoteAddr,
			Header: r.Header.Clone(), Trailer: r.Trailer.Clone(), Body: body, TLS: r.TLS != nil}
		if r.TLS != nil {
			rec.SNI = r.TLS.ServerName
		}
		o.mu.Lock()
		o.requests = append(o.requests, rec)
		o.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		o.Mux.ServeHTTP(w, r)
	})
	for _, tlsOn := range []bool{false, true} {
		l, err := h.Listen(0)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: record, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		if tlsOn {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
			o.HTTPS = l.Addr().(*net.TCPAddr).AddrPort()
			l = tls.NewListener(l, srv.TLSConfig)
		} else {
			o.HTTP = l.Addr().(*net.TCPAddr).AddrPort()
		}
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(l) }()
		t.Cleanup(func() { srv.Close(); <-done })
	}
	return o
}

// Forget drops the requests recorded so far (a benchmark's, which would pile up).
func (o *Origin) Forget() {
	o.mu.Lock()
	o.requests = nil
	o.mu.Unlock()
}

// Requests returns what the origin received so far.
func (o *Origin) Requests() []Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Request(nil), o.requests...)
}

// testCA makes a CA and a certificate it signs for names.
func (o *Origin) testCA(names []string) (tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nethost test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	o.Roots = x509.NewCertPool()
	o.Roots.AddCert(ca)
	o.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
