package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// hopByHop are the headers that belong to one connection (RFC 9110 §7.6.1), with
// the proxy's own; every Proxy-* header goes too.
var hopByHop = []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func stripHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
	for name := range h {
		if strings.HasPrefix(name, "Proxy-") {
			delete(h, name)
		}
	}
}

// exchange sends req to the destination (w, r) and relays the answer to the client.
// The body is sent through a guard that stops at any of the guarded placeholders.
// It reports whether the client connection and the destination connection may each
// carry another request.
func exchange(req *http.Request, w io.Writer, r *bufio.Reader, client io.Writer, guarded []secretRule) (clientKeep, upKeep bool, err error) {
	clientClose := req.Close
	stripHopByHop(req.Header)
	// Trailers arrive after the body, past every check: they are not carried.
	req.Trailer = nil
	if req.Header.Get("Expect") != "" {
		// The client waits for a 100 before it sends its body; the proxy has decided,
		// so it answers for the destination rather than make the client wait it out.
		req.Header.Del("Expect")
		if _, err := io.WriteString(client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false, false, err
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keeps net/http from adding its own
	}
	if len(guarded) > 0 && req.Body != nil && req.Body != http.NoBody {
		req.Body = &guardBody{guard: newGuard(req.Body, guarded), c: req.Body}
	}
	req.Close = false
	if err := writeFlushing(w, req.Write, &req.Body, nil); err != nil {
		return false, false, err
	}
	resp, err := http.ReadResponse(r, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			return false, false, errors.New("destination switched protocols, which the proxy does not carry")
		}
		resp, err = http.ReadResponse(r, req) // 103 and the like: dropped
	}
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	upClose := resp.Close
	stripHopByHop(resp.Header)
	resp.Trailer = nil
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	resp.Close = clientClose
	if err := writeFlushing(client, resp.Write, &resp.Body, r); err != nil {
		return false, false, err
	}
	unframed := resp.ContentLength < 0 && !isChunked(resp.TransferEncoding)
	return !clientClose && !unframed, !upClose && !unframed, nil
}

// writeFlushing writes a request or response (write is its Write method) through a
// buffer large enough for a whole chunk with its framing, and flushes whenever it is
// about to wait for more of the body (src, if known, holds none buffered): one
// system call per chunk, and a trickling stream (server-sent events) is passed on as
// it comes.
func writeFlushing(w io.Writer, write func(io.Writer) error, body *io.ReadCloser, src *bufio.Reader) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if *body != nil && *body != http.NoBody {
		*body = &flushBeforeRead{ReadCloser: *body, w: bw, src: src}
	}
	if err := write(byteWriter{bw}); err != nil {
		return err
	}
	return bw.Flush()
}

type flushBeforeRead struct {
	io.ReadCloser
	w   *bufio.Writer
	src *bufio.Reader
}

func (f *flushBeforeRead) Read(p []byte) (int, error) {
	if f.src == nil || f.src.Buffered() == 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.ReadCloser.Read(p)
}

// byteWriter is a bufio.Writer without ReadFrom, which would read the body into the
// very buffer that flushBeforeRead flushes. It is an io.ByteWriter, so Request.Write
// adds no buffer of its own.
type byteWriter struct{ bw *bufio.Writer }

func (w byteWriter) Write(p []byte) (int, error)       { return w.bw.Write(p) }
func (w byteWriter) WriteByte(c byte) error            { return w.bw.WriteByte(c) }
func (w byteWriter) WriteString(s string) (int, error) { return w.bw.WriteString(s) }

func isChunked(te []string) bool { return len(te) > 0 && te[0] == "chunked" }

// findPlaceholder looks for a placeholder of any of secrets in the request's target
// and headers, ignoring case, in the target as sent and percent-decoded up to four
// times. It is a tripwire, not the boundary: a placeholder is worthless outside the
// proxy, and one encoded otherwise (base64, a compressed body) passes unseen.
func findPlaceholder(req *http.Request, secrets []secretRule) (secretRule, string, bool) {
	if len(secrets) == 0 {
		return secretRule{}, "", false
	}
	targets := []string{strings.ToLower(req.RequestURI)}
	for u := req.RequestURI; len(targets) < 5; {
		d, err := url.QueryUnescape(strings.ReplaceAll(u, "+", "%2B"))
		if err != nil || d == u {
			break
		}
		targets, u = append(targets, strings.ToLower(d)), d
	}
	for _, s := range secrets {
		ph := strings.ToLower(s.placeholder)
		for _, t := range targets {
			if strings.Contains(t, ph) {
				return s, "URL", true
			}
		}
		for name, values := range req.Header {
			if strings.Contains(strings.ToLower(name), ph) {
				return s, "headers", true
			}
			for _, v := range values {
				if strings.Contains(strings.ToLower(v), ph) {
					return s, "headers", true
				}
			}
		}
	}
	return secretRule{}, "", false
}

// inject writes each secret's value in place of its placeholder in the header
// values.
func inject(h http.Header, secrets []secretRule) {
	for _, s := range secrets {
		for name, values := range h {
			for i, v := range values {
				if strings.Contains(v, s.placeholder) {
					h[name][i] = strings.ReplaceAll(v, s.placeholder, s.value)
				}
			}
		}
	}
}

// placeholderError stops a body that carries a guarded placeholder.
type placeholderError struct{ name string }

func (e *placeholderError) Error() string {
	return fmt.Sprintf("egress: placeholder of secret %s in a request body", e.name)
}
