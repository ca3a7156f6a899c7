package model

import (
	"context"
	"net/http"
	"time"
)

// AnthropicVersion is the anthropic-version header the adapter speaks.
const AnthropicVersion = "2023-06-01"

// AnthropicConfig configures an Anthropic Messages adapter. The zero value of every
// field is usable except APIKey, which api.anthropic.com requires.
type AnthropicConfig struct {
	// BaseURL is the API root that /v1/messages is appended to; default
	// https://api.anthropic.com.
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey Secret
	// Provider names this endpoint in Meta, errors and the breaker; default
	// "anthropic".
	Provider string
	// Stream requests server-sent events (stream: true).
	Stream bool
	// DefaultMaxTokens is sent as max_tokens, which the protocol requires, when the
	// Request has no MaxOutputTokens; default 4096.
	DefaultMaxTokens int
	// HTTPClient defaults to a client without a timeout: a long generation is not a
	// failure. Bound a call with the context's deadline.
	HTTPClient *http.Client
	Observer   Observer
	Prices     PriceTable
	Clock      Clock
	// MaxResponseBytes caps a body or a whole stream; default 32 MiB.
	MaxResponseBytes int64
	// StreamIdleTimeout ends a stream that sends nothing (not even a ping) for this
	// long after its headers; default 2 minutes.
	StreamIdleTimeout time.Duration
}

// Anthropic is a Client for the Anthropic Messages protocol. It is safe for
// concurrent use; each Complete is one HTTP request.
type Anthropic struct {
	cfg AnthropicConfig
	tr  transport
}

// NewAnthropic checks cfg and returns the adapter.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.anthropic.com"
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = 4096
	}
	tr, err := newTransport(cfg.Provider, cfg.BaseURL, "/v1/messages", cfg.APIKey, cfg.HTTPClient,
		cfg.Clock, cfg.Observer, cfg.Prices, cfg.MaxResponseBytes, cfg.StreamIdleTimeout)
	if err != nil {
		return nil, err
	}
	return &Anthropic{cfg: cfg, tr: tr}, nil
}

// Provider returns the name this adapter reports in Meta and errors.
func (c *Anthropic) Provider() string { return c.cfg.Provider }

// Complete sends req to POST {BaseURL}/v1/messages.
func (c *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	body, names, err := encodeAnthropic(req, c.cfg.Stream, c.cfg.DefaultMaxTokens)
	if err != nil {
		return Response{}, err
	}
	h := jsonHeaders(c.cfg.Stream)
	h.Set("anthropic-version", AnthropicVersion)
	if !c.cfg.APIKey.IsZero() {
		h.Set("x-api-key", c.cfg.APIKey.Reveal())
	}

	sctx, arm, stop := c.tr.streamContext(ctx)
	defer stop()
	x := c.tr.begin(ctx, req.Model, c.cfg.Stream)
	resp, err := x.post(sctx, h, body)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		err := x.statusError(resp, parseAnthropicError)
		return Response{Meta: x.meta}, err
	}
	if c.cfg.Stream && isEventStream(resp) {
		return readAnthropicStream(ctx, sctx, x, arm(resp.Body), names)
	}
	x.meta.Streamed = false
	return readAnthropicJSON(sctx, x, resp, names)
}
