package egress

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
)

// TestReadClientHello reads a real ClientHello with its server name, and gives back
// every byte it consumed, unchanged.
func TestReadClientHello(t *testing.T) {
	for _, sni := range []string{"example.com", "EXAMPLE.com", ""} {
		client, server := net.Pipe()
		var sent bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			c := tls.Client(&teeConn{Conn: client, w: &sent}, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			c.Handshake()
			client.Close()
		}()
		name, consumed, err := readClientHello(server)
		server.Close()
		<-done
		if err != nil || name != sni {
			t.Fatalf("SNI %q: got %q, %v", sni, name, err)
		}
		if !bytes.HasPrefix(sent.Bytes(), consumed) || len(consumed) < 100 {
			t.Fatalf("consumed %d bytes that the client did not send as such", len(consumed))
		}
	}
}

func TestReadClientHelloNotTLS(t *testing.T) {
	for _, in := range []string{"GET / HTTP/1.1\r\nHost: evil.com\r\n\r\n", "CONNECT evil.com:443 HTTP/1.1\r\n\r\n", "\x16\x03\x01\x00\x05hello", ""} {
		if name, _, err := readClientHello(strings.NewReader(in)); err == nil {
			t.Errorf("%q read as a ClientHello for %q", in, name)
		}
	}
}

type teeConn struct {
	net.Conn
	w io.Writer
}

func (c *teeConn) Write(b []byte) (int, error) {
	c.w.Write(b)
	return c.Conn.Write(b)
}
