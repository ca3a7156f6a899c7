package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Options configure a Client. Exactly one of Socket and URL is set.
type Options struct {
	// Socket is the path of the daemon's Unix socket.
	Socket string
	// URL is the daemon's base URL for TCP, e.g. "http://127.0.0.1:7070".
	URL string
	// Token is the bearer token sent with every request.
	Token string
	// HTTPClient, if set, is used instead of one built from Socket or URL; its
	// Transport must reach the daemon.
	HTTPClient *http.Client
	// Reconnects bounds how often an event stream reconnects in a row without
	// receiving an event. Default 8.
	Reconnects int
	// ReconnectDelay is the first pause before a reconnection; it doubles up to 2 s.
	// Default 100 ms.
	ReconnectDelay time.Duration
}

// Client calls one agentbox daemon. It is safe for concurrent use.
type Client struct {
	base  string // scheme://host, no trailing slash
	addr  string // for NoDaemonError
	token string
	hc    *http.Client
	opts  Options
}

// New returns a client for the daemon described by o.
func New(o Options) (*Client, error) {
	if o.Reconnects <= 0 {
		o.Reconnects = 8
	}
	if o.ReconnectDelay <= 0 {
		o.ReconnectDelay = 100 * time.Millisecond
	}
	c := &Client{token: o.Token, opts: o}
	switch {
	case o.Socket != "" && o.URL != "":
		return nil, errors.New("client: set Socket or URL, not both")
	case o.Socket != "":
		c.base, c.addr = "http://agentbox", o.Socket
		sock := o.Socket
		c.hc = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}}
	case o.URL != "":
		u, err := url.Parse(o.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("client: URL %q is not http(s)://host[:port]", o.URL)
		}
		c.base, c.addr = strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), u.Host
		c.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
	default:
		return nil, errors.New("client: no daemon address (Socket or URL)")
	}
	if o.HTTPClient != nil {
		c.hc = o.HTTPClient
	}
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Health reports whether the daemon answers /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// request builds a request to path (which may carry a query) with the token.
func (c *Client) request(ctx context.Context, method, path string, body io.Reader, ctype string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}

// send performs req and turns an error response into *Error and a refused
// connection into *NoDaemonError. On success the caller owns resp.Body.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		if noDaemon(err) {
			return nil, &NoDaemonError{Addr: c.addr, Err: err}
		}
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// do sends a JSON (or raw, when in is an io.Reader) request and decodes a JSON
// response into out (unless out is nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body io.Reader
	ctype := ""
	switch v := in.(type) {
	case nil:
	case io.Reader:
		body, ctype = v, "application/octet-stream"
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("client: encode request: %w", err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := c.request(ctx, method, path, body, ctype)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: decode %s %s response: %w", method, path, err)
	}
	return nil
}

// raw sends a request and returns the whole response body.
func (c *Client) raw(ctx context.Context, method, path string, q url.Values) ([]byte, http.Header, error) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := c.request(ctx, method, path, nil, "")
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("client: read %s response: %w", path, err)
	}
	return b, resp.Header, nil
}

// decodeError reads an error envelope; a body that is not one becomes an *Error
// with the status and the body's first line.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var env Envelope
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Code != "" {
		env.Error.Status = resp.StatusCode
		return env.Error
	}
	msg, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &Error{Code: codeForStatus(resp.StatusCode), Message: msg, Status: resp.StatusCode,
		Retryable: resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests}
}

func codeForStatus(status int) string {
	switch status {
	case 400:
		return CodeInvalid
	case 401:
		return CodeAuth
	case 403:
		return CodePermission
	case 404, 405:
		return CodeNotFound
	case 408:
		return CodeTimeout
	case 409:
		return CodeBusy
	case 413:
		return CodeTooLarge
	case 429:
		return CodeRate
	case 503:
		return CodeUnavailable
	case 507:
		return CodeNoSpace
	}
	return CodeInternal
}

// noDaemon reports whether err means nothing listens at the address.
func noDaemon(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }
