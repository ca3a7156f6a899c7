package tool

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/agentbox/agentbox/internal/egress"
)

// fetchProxy is the host-side egress proxy http.fetch sends through: the
// session's egress policy decides what it reaches, whatever the permission policy
// allowed, and its log records every connection.
type fetchProxy struct {
	proxy *egress.Proxy
	l     net.Listener
	done  chan error

	mu     sync.Mutex
	policy egress.Policy // as last set
}

// openFetch starts a proxy with cfg on loopback and returns the http.fetch tool
// that sends through it.
func openFetch(cfg egress.Config) (Spec, *fetchProxy, error) {
	p, err := egress.NewProxy(cfg)
	if err != nil {
		return Spec{}, nil, fmt.Errorf("tool: egress proxy for http.fetch: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Spec{}, nil, fmt.Errorf("tool: egress proxy for http.fetch: %w", err)
	}
	fp := &fetchProxy{proxy: p, l: l, done: make(chan error, 1), policy: cfg.Policy}
	go func() { fp.done <- p.Serve(l) }()
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM(p.CACertPEM())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: l.Addr().String()})
	tr.TLSClientConfig.RootCAs = roots
	spec, err := HTTPFetch(FetchOptions{Transport: tr})
	if err != nil {
		fp.close()
		return Spec{}, nil, err
	}
	return spec, fp, nil
}

// scan turns the proxy's egress scan on with values, as the sandbox's proxy's
// is (Env.ScanEgress): one mechanism, egress.Scan, whichever proxy a send
// goes through.
func (fp *fetchProxy) scan(values []string) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	p := fp.policy
	p.Scan.On, p.Scan.Values = true, slices.Clone(values)
	if err := fp.proxy.SetPolicy(p); err != nil {
		return fmt.Errorf("tool: egress scan of http.fetch: %w", err)
	}
	fp.policy = p
	return nil
}

func (fp *fetchProxy) close() error {
	if fp == nil {
		return nil
	}
	fp.proxy.Close()
	if err := <-fp.done; !errors.Is(err, egress.ErrClosed) {
		return err
	}
	return nil
}
