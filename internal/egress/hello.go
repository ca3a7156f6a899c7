package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// maxHello bounds the bytes read while looking for a ClientHello (one can span
// several records; post-quantum key shares make it a few KiB).
const maxHello = 64 << 10

var errHelloRead = errors.New("client hello read")

// readClientHello reads a TLS ClientHello from r with crypto/tls's own parser and
// returns its server name and every byte it consumed, to be sent on unchanged. It
// fails if the bytes are not TLS. The caller bounds the wait with a read deadline.
func readClientHello(r io.Reader) (serverName string, consumed []byte, err error) {
	var buf bytes.Buffer
	var hello *tls.ClientHelloInfo
	conn := &readOnlyConn{r: io.TeeReader(io.LimitReader(r, maxHello), &buf)}
	err = tls.Server(conn, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = h
			return nil, errHelloRead
		},
	}).HandshakeContext(context.Background())
	if hello == nil {
		if err == nil {
			err = errors.New("no ClientHello")
		}
		return "", nil, err
	}
	return hello.ServerName, buf.Bytes(), nil
}

// readOnlyConn gives tls.Server bytes to read; what it would write (an alert) is
// dropped, as the client must not hear from this parser.
type readOnlyConn struct {
	r io.Reader
	net.Conn
}

func (c *readOnlyConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *readOnlyConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *readOnlyConn) Close() error                     { return nil }
func (c *readOnlyConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *readOnlyConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *readOnlyConn) SetDeadline(time.Time) error      { return nil }
func (c *readOnlyConn) SetReadDeadline(time.Time) error  { return nil }
func (c *readOnlyConn) SetWriteDeadline(time.Time) error { return nil }
