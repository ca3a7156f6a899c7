package egress

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/textproto"
)

var errHeadTooLarge = errors.New("request head larger than 64 KiB")

// readRequest reads one request and returns it with its Host headers, which
// http.ReadRequest drops for an absolute URI (RFC 9112 §3.2.2 tells a proxy to
// ignore them; this proxy refuses a request whose Host disagrees instead). The head
// is parsed twice from the same bytes by the same parser (net/textproto), so both
// readings see the same headers.
func readRequest(br *bufio.Reader) (*http.Request, []string, error) {
	head, err := peekHead(br)
	if err != nil {
		return nil, nil, err
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, nil, err
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, nil, err
	}
	return req, h.Values("Host"), nil
}

// peekHead returns the buffered request head, up to and including the empty line
// that ends it, without consuming it.
func peekHead(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; {
		if _, err := br.Peek(n); err != nil {
			return nil, err
		}
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.Index(buf, []byte("\n\r\n")); i >= 0 {
			buf = buf[:i+3]
		} else if i := bytes.Index(buf, []byte("\n\n")); i >= 0 {
			buf = buf[:i+2]
		} else if len(buf) >= br.Size() {
			return nil, errHeadTooLarge
		} else {
			n = len(buf) + 1
			continue
		}
		return buf, nil
	}
}
