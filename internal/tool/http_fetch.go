package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/policy"
)

// ScopeNetwork grants http.fetch; ScopeMCP the tools mounted from external MCP
// servers.
const (
	ScopeNetwork = "network"
	ScopeMCP     = "mcp"
)

// FetchOptions configure http.fetch. Transport is required: it must send through
// the session's egress proxy (an http.Transport whose Proxy is the proxy's
// address and whose roots trust the proxy's CA), so the allowlist, the address
// checks and the connection log are the proxy's, never this tool's.
type FetchOptions struct {
	Transport http.RoundTripper
	// Timeout bounds one request, default 30 s; a call may ask for less.
	Timeout time.Duration
	// MaxBody caps what is read of a response body, default 1 MiB; MaxOutput
	// what reaches the model, default DefaultMaxOutput.
	MaxBody   int64
	MaxOutput int
}

// MaxFetchBody bounds a request body http.fetch sends.
const MaxFetchBody = 1 << 20

type fetchArgs struct {
	URL            string            `json:"url" jsonschema:"absolute http or https URL"`
	Method         string            `json:"method,omitempty" jsonschema:"HTTP method (default GET)"`
	Headers        map[string]string `json:"headers,omitempty" jsonschema:"request headers (not Host, Proxy-* or hop-by-hop ones)"`
	Body           string            `json:"body,omitempty" jsonschema:"request body, at most 1 MiB"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty"`
}

type fetchOut struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	Bytes       int64  `json:"bytes"`
	Truncated   bool   `json:"truncated"`
	Location    string `json:"location,omitempty" jsonschema:"a redirect's target: it is not followed; fetch it with a new call"`
}

// forbiddenHeaders are set by the transport or the proxy, never by a call.
var forbiddenHeaders = []string{"host", "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "content-length"}

func (a fetchArgs) check() error {
	u, err := url.Parse(a.URL)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return Errorf(EINVAL, false, ActFixArgs, "url %q: want an absolute http or https URL", a.URL)
	case len(a.Body) > MaxFetchBody:
		return Errorf(EFBIG, false, ActNarrow, "body of %d bytes: at most %d", len(a.Body), MaxFetchBody)
	case a.TimeoutSeconds < 0:
		return Errorf(EINVAL, false, ActFixArgs, "timeout_seconds must not be negative")
	}
	for k := range a.Headers {
		lk := strings.ToLower(k)
		if slices.Contains(forbiddenHeaders, lk) || strings.HasPrefix(lk, "proxy-") {
			return Errorf(EINVAL, false, ActFixArgs, "header %q is set by the transport, not by a call", k)
		}
	}
	return nil
}

func (a fetchArgs) method() string {
	if a.Method == "" {
		return http.MethodGet
	}
	return strings.ToUpper(a.Method)
}

// action is what the gate judges: the URL, the method, and everything sent
// (headers and body) as the payload it scans for secrets.
func (a fetchArgs) action() policy.Action {
	var p strings.Builder
	for k, v := range a.Headers {
		p.WriteString(k + ": " + v + "\n")
	}
	p.WriteString(a.Body)
	return policy.Action{URL: a.URL, Method: a.method(), Payload: p.String()}
}

// HTTPFetch returns the http.fetch tool. Redirects are not followed: a 3xx
// comes back with its location, and a next call is judged anew.
func HTTPFetch(o FetchOptions) (Spec, error) {
	if o.Transport == nil {
		return Spec{}, fmt.Errorf("%w \"http.fetch\": no transport (it must send through the egress proxy)", ErrRegister)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	client := &http.Client{Transport: o.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return Spec{
		Name: "http.fetch",
		Description: "Send one HTTP request beyond the sandbox, through its egress proxy, and return the response. " +
			"Redirects are not followed. Sending data out may need a person's approval.",
		InputSchema: SchemaFor[fetchArgs](), OutputSchema: SchemaFor[fetchOut](),
		Effect: EffectNetwork, Scope: ScopeNetwork,
		Describe: describeWith(fetchArgs.action),
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a fetchArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			return a.check()
		},
		Handler: func(ctx context.Context, raw json.RawMessage) (Result, error) {
			var a fetchArgs
			if err := decode(raw, &a); err != nil {
				return Result{}, err
			}
			timeout := o.Timeout
			if a.TimeoutSeconds > 0 {
				timeout = min(timeout, time.Duration(a.TimeoutSeconds*float64(time.Second)))
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var body io.Reader
			if a.Body != "" {
				body = strings.NewReader(a.Body)
			}
			req, err := http.NewRequestWithContext(ctx, a.method(), a.URL, body)
			if err != nil {
				return Result{}, Errorf(EINVAL, false, ActFixArgs, "request: %v", err)
			}
			for k, v := range a.Headers {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return Result{}, Errorf(ETIMEDOUT, true, ActRetry, "%s %s: no response within %s", a.method(), a.URL, timeout)
				}
				return Result{}, Errorf(ETRANSIENT, true, ActRetry, "%s %s: %v", a.method(), a.URL, err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBody+1))
			if err != nil {
				return Result{}, Errorf(ETRANSIENT, true, ActRetry, "%s %s: reading the response: %v", a.method(), a.URL, err)
			}
			out := fetchOut{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
				Bytes: int64(len(b)), Location: resp.Header.Get("Location")}
			if int64(len(b)) > o.MaxBody {
				b, out.Bytes, out.Truncated = b[:o.MaxBody], o.MaxBody, true
			}
			text := ""
			if utf8.Valid(b) && !isBinary(b) {
				c := Clip(string(b), o.MaxOutput)
				text, out.Truncated = c.Text, out.Truncated || c.Truncated
			} else {
				text = fmt.Sprintf("[%d bytes of binary content not shown]", len(b))
			}
			return Result{Data: out, Text: text, Source: "url:" + a.URL, Truncated: out.Truncated}, nil
		},
	}, nil
}
