package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

const (
	defaultMaxResponseBytes = 32 << 20
	defaultStreamIdle       = 2 * time.Minute
	maxErrorBody            = 64 << 10
	maxProviderMessage      = 512
)

// errStreamIdle is the cause when a stream sends nothing for StreamIdleTimeout.
var errStreamIdle = errors.New("stream idle timeout")

// transport is what both adapters share: one HTTP exchange per Complete, and the
// accounting record of it.
type transport struct {
	provider string
	url      string
	client   *http.Client
	clock    Clock
	observer Observer
	prices   PriceTable
	key      Secret
	maxBody  int64
	idle     time.Duration
}

func newTransport(provider, base, path string, key Secret, client *http.Client, clock Clock,
	obs Observer, prices PriceTable, maxBody int64, idle time.Duration) (transport, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return transport{}, fmt.Errorf("model: %s: base URL must be http(s)://host[/path]", provider)
	}
	if u.User != nil {
		return transport{}, fmt.Errorf("model: %s: base URL must not carry credentials; use APIKey", provider)
	}
	u.Path = trimSlash(u.Path) + path
	if client == nil {
		client = &http.Client{}
	}
	// Never follow a redirect: net/http would resend custom headers such as
	// x-api-key to whatever host the Location names. A 3xx is returned as an
	// APIError instead.
	cl := *client
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &cl
	if maxBody <= 0 {
		maxBody = defaultMaxResponseBytes
	}
	if idle <= 0 {
		idle = defaultStreamIdle
	}
	return transport{provider: provider, url: u.String(), client: client, clock: clockOr(clock),
		observer: obs, prices: prices, key: key, maxBody: maxBody, idle: idle}, nil
}

func trimSlash(p string) string {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}

// exchange is one HTTP attempt. It owns the Meta that the observer receives exactly
// once, whichever way the attempt ends after a response arrived.
type exchange struct {
	tr       *transport
	model    string
	start    time.Time
	meta     Meta
	reported bool
}

func (tr *transport) begin(ctx context.Context, model string, stream bool) *exchange {
	return &exchange{tr: tr, model: model, start: tr.clock.Now(),
		meta: Meta{Provider: tr.provider, Model: model, Attempt: attemptFrom(ctx), Streamed: stream}}
}

func (x *exchange) setIDs(responseID, model string) {
	if responseID != "" {
		x.meta.ResponseID = truncate(x.tr.key.scrub(responseID), 200)
	}
	if model != "" {
		x.meta.Model = truncate(x.tr.key.scrub(model), 200)
	}
}

// scrubResponse removes the key from what the endpoint sent back. Only an endpoint
// that was given the key can echo it, but its reply goes into traces and logs.
// Arguments are scrubbed as sent (a key spelled with JSON escapes survives there).
func (x *exchange) scrubResponse(r *Response) {
	k := x.tr.key
	if k.IsZero() {
		return
	}
	r.Text = k.scrub(r.Text)
	for i := range r.ToolCalls {
		c := &r.ToolCalls[i]
		c.ID, c.Name = k.scrub(c.ID), k.scrub(c.Name)
		if c.Args != nil {
			c.Args = json.RawMessage(k.scrub(string(c.Args)))
		}
		if c.ArgsErr != nil {
			c.ArgsErr.Raw = k.scrub(c.ArgsErr.Raw)
		}
	}
}

func (x *exchange) setUsage(u Usage) {
	x.meta.Usage = u
	x.meta.UsageReported = true
}

func (x *exchange) firstToken() {
	if x.meta.TTFT == 0 {
		x.meta.TTFT = max(x.tr.clock.Now().Sub(x.start), 1)
	}
}

// report completes the Meta (latency, cost) and hands it to the observer, once.
// Adapters call it before turning a body into messages.
func (x *exchange) report(err error) Meta {
	if x.reported {
		return x.meta
	}
	x.reported = true
	if x.meta.RequestID == "" {
		x.meta.RequestID = x.meta.ResponseID
	}
	x.meta.ErrorClass = ErrorClass(err)
	x.meta.Latency = x.tr.clock.Now().Sub(x.start)
	p, ok := x.tr.prices.price(x.model, x.meta.Model)
	x.meta.PriceKnown = ok
	if ok && x.meta.UsageReported {
		x.meta.CostUSD = p.cost(x.meta.Usage)
	}
	if x.tr.observer != nil {
		x.tr.observer.OnResponse(x.meta)
	}
	return x.meta
}

// post sends body. An error here means no response arrived, so nothing is reported.
func (x *exchange) post(ctx context.Context, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.tr.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("model: %s: build request: %w", x.tr.provider, err)
	}
	req.Header = header
	resp, err := x.tr.client.Do(req)
	if err != nil {
		return nil, x.tr.netError(ctx, err)
	}
	x.meta.Status = resp.StatusCode
	x.meta.RequestID = x.tr.key.scrub(requestID(resp.Header))
	return resp, nil
}

// netError classifies a failure below HTTP: the caller's cancellation is not a
// network error (and must not be retried); anything else is.
func (tr *transport) netError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("model: %s: %w", tr.provider, ctx.Err())
	}
	return &NetworkError{Provider: tr.provider, Err: err}
}

func requestID(h http.Header) string {
	for _, k := range []string{"request-id", "x-request-id", "x-amzn-requestid", "cf-ray"} {
		if v := h.Get(k); v != "" {
			return truncate(v, 200)
		}
	}
	return ""
}

// readBody reads a whole non-streamed body, capped. On failure it reports first.
func (x *exchange) readBody(ctx context.Context, resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, x.tr.maxBody+1))
	if err != nil {
		err = x.tr.netError(ctx, err)
		x.report(err)
		return nil, err
	}
	if int64(len(data)) > x.tr.maxBody {
		err := x.badResponse(fmt.Errorf("body larger than %d bytes", x.tr.maxBody))
		x.report(err)
		return nil, err
	}
	return data, nil
}

func (x *exchange) badResponse(err error) error {
	return &ResponseError{Provider: x.tr.provider, RequestID: firstNonEmpty(x.meta.RequestID, x.meta.ResponseID), Err: err}
}

// providerError is what an adapter reads from an error body.
type providerError struct {
	Type, Code, Message string
	overflow            bool
	limit, requested    int
	requestID           string
}

// statusError turns a non-2xx response into an APIError and reports it.
func (x *exchange) statusError(resp *http.Response, parse func(status int, body []byte) providerError) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	pe := parse(resp.StatusCode, body)
	if x.meta.RequestID == "" {
		x.meta.RequestID = truncate(x.tr.key.scrub(pe.requestID), 200)
	}
	e := &APIError{
		Provider:   x.tr.provider,
		Status:     resp.StatusCode,
		Type:       truncate(x.tr.key.scrub(pe.Type), 100),
		Code:       truncate(x.tr.key.scrub(pe.Code), 100),
		Message:    cutMessage(x.tr.key.scrub(pe.Message)),
		RequestID:  x.meta.RequestID,
		RetryAfter: retryAfter(resp.Header, x.tr.clock.Now()),
		kind:       classify(resp.StatusCode, pe.overflow),
	}
	if e.kind == ErrAuth {
		e.Message = "" // may quote part of the key
	}
	if e.kind == ErrContextOverflow {
		e.ContextLimit, e.RequestedTokens = pe.limit, pe.requested
	}
	x.report(e)
	return e
}

func cutMessage(s string) string {
	if len(s) <= maxProviderMessage {
		return s
	}
	i := maxProviderMessage
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

func classify(status int, overflow bool) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrAuth
	case overflow || status == http.StatusRequestEntityTooLarge:
		return ErrContextOverflow
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status == http.StatusRequestTimeout || status >= 500:
		return ErrUnavailable
	}
	return ErrBadRequest
}

// idleBody cancels the request when a stream sends nothing for the idle timeout,
// so a provider that stops mid-stream without closing does not hang the loop.
type idleBody struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	return n, err
}

// streamContext derives the context a stream runs under, a function that starts the
// idle timer once the response headers are in (prompt processing before them may
// legitimately take long) and wraps the body, and stop, to call when done.
func (tr *transport) streamContext(ctx context.Context) (context.Context, func(io.Reader) io.Reader, func()) {
	sctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(time.Hour, func() { cancel(errStreamIdle) })
	timer.Stop()
	arm := func(r io.Reader) io.Reader {
		timer.Reset(tr.idle)
		return &idleBody{r: r, timer: timer, idle: tr.idle}
	}
	return sctx, arm, func() { timer.Stop(); cancel(nil) }
}

// errTooLarge ends a stream longer than MaxResponseBytes.
var errTooLarge = errors.New("response larger than the limit")

type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (x *exchange) capped(r io.Reader) io.Reader { return &capReader{r: r, left: x.tr.maxBody} }

// streamError classifies a read error in the middle of a stream: the caller's
// cancellation, an oversized stream, or a network failure (including the idle
// timeout and a stream that stops before its end marker), which may be retried.
func (x *exchange) streamError(parent, sctx context.Context, err error) error {
	tr := x.tr
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("model: %s: %w", tr.provider, parent.Err())
	case errors.Is(err, errTooLarge):
		return x.badResponse(fmt.Errorf("stream larger than %d bytes", tr.maxBody))
	case errors.Is(err, bufio.ErrTooLong):
		return x.badResponse(fmt.Errorf("event stream line longer than %d bytes", maxSSELine))
	case errors.Is(context.Cause(sctx), errStreamIdle):
		return &NetworkError{Provider: tr.provider, Err: fmt.Errorf("%w after %s", errStreamIdle, tr.idle)}
	}
	return &NetworkError{Provider: tr.provider, Err: err}
}

func isEventStream(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return len(ct) >= 17 && ct[:17] == "text/event-stream"
}

// jsonHeaders are the headers every JSON request sends: the body's type, and what
// the reply may be (an event stream when streaming).
func jsonHeaders(stream bool) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	return h
}
