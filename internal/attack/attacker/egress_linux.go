package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

func init() { register("proxy", proxy) }

// proxy talks to the sandbox's egress proxy (the address in $HTTPS_PROXY) the way
// a hostile client would, byte for byte, and reports what came back. ${VAR} in a
// request is replaced by the variable's value (a secret's placeholder, say).
//
//	proxy SPEC...
//
//	raw:NAME:BYTES            send BYTES (a Go string literal's body: \r\n, \x00…)
//	                          and read the answer: ok "<status> <X-Agentbox-Egress> <body>"
//	tls:NAME:TARGET,SNI,REQ   CONNECT TARGET, then TLS naming SNI (none if empty;
//	                          the certificate is not checked: what matters is what the
//	                          proxy lets through), then send REQ (as BYTES) inside:
//	                          ok "<status> <body>"; a refused CONNECT fails as
//	                          PROXY_<status>_<reason>
//	relay:PORT                start a relay on 127.0.0.1:PORT that joins each connection
//	                          to the proxy (a second proxy inside the sandbox); the
//	                          following specs go through it
//	resolve:NAME              look NAME up as the sandbox's resolver would
func proxy(args []string) {
	via := proxyAddr()
	for _, spec := range args {
		kind, rest, _ := strings.Cut(spec, ":")
		name, arg, _ := strings.Cut(rest, ":")
		switch kind {
		case "raw":
			detail, err := rawRequest(via, arg)
			report("raw:"+name, err, "%s", detail)
		case "tls":
			detail, err := tlsRequest(via, arg)
			report("tls:"+name, err, "%s", detail)
		case "relay":
			port, err := strconv.Atoi(rest)
			if err == nil {
				err = relay(port, via)
			}
			if err == nil {
				via = net.JoinHostPort("127.0.0.1", rest)
			}
			report("relay:"+rest, err, "relaying 127.0.0.1:%s to the proxy", rest)
		case "resolve":
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			addrs, err := net.DefaultResolver.LookupHost(ctx, rest)
			cancel()
			report("resolve:"+rest, err, "%v", addrs)
		default:
			usage()
		}
	}
}

// proxyAddr is host:port of $HTTPS_PROXY.
func proxyAddr() string {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return "127.0.0.1:3128"
	}
	return u.Host
}

func payload(s string) (string, error) {
	b, err := strconv.Unquote(`"` + s + `"`)
	if err != nil {
		return "", fmt.Errorf("bad request literal %q: %w", s, err)
	}
	return os.Expand(b, os.Getenv), nil
}

func rawRequest(via, arg string) (string, error) {
	req, err := payload(arg)
	if err != nil {
		return "", err
	}
	c, err := net.DialTimeout("tcp", via, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("X-Agentbox-Egress"), strings.TrimSpace(string(body))), nil
}

func tlsRequest(via, arg string) (string, error) {
	f := strings.SplitN(arg, ",", 3)
	if len(f) != 3 {
		return "", errors.New("tls wants TARGET,SNI,REQUEST")
	}
	target, sni := f[0], f[1]
	req, err := payload(f[2])
	if err != nil {
		return "", err
	}
	c, err := net.DialTimeout("tcp", via, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("PROXY_%d_%s", resp.StatusCode, resp.Header.Get("X-Agentbox-Egress"))
	}
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		return "", fmt.Errorf("TLS_%s", strings.ReplaceAll(err.Error(), " ", "_"))
	}
	if _, err := io.WriteString(tc, req); err != nil {
		return "", err
	}
	r, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", fmt.Errorf("TLS_RESPONSE_%s", strings.ReplaceAll(err.Error(), " ", "_"))
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 200))
	return fmt.Sprintf("%d %s %s", r.StatusCode, r.Header.Get("X-Agentbox-Egress"), strings.TrimSpace(string(body))), nil
}

// bufConn reads what the CONNECT response's reader already buffered first.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// relay forwards every connection to 127.0.0.1:port to the proxy, in the
// background, for as long as the attacker runs: an in-sandbox relay of the kind
// that let a peer's allowlist be bypassed.
func relay(port int, to string) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", to)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
	return nil
}
