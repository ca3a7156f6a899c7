package model

import (
	"context"
	"net/http"
	"time"
)

// OpenAIConfig configures an OpenAI Chat Completions adapter. The zero value of every
// field but BaseURL is usable.
type OpenAIConfig struct {
	// BaseURL is the API root that /chat/completions is appended to:
	// https://api.openai.com/v1, https://openrouter.ai/api/v1,
	// http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:8080/v1 (llama.cpp),
	// http://127.0.0.1:11434/v1 (Ollama).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer"; the zero Secret sends no header
	// (local servers).
	APIKey Secret
	// Provider names this endpoint in Meta, errors and the breaker; default "openai".
	Provider string
	// Stream requests server-sent events (stream: true, with usage in the last
	// chunk). A server that answers a stream request with plain JSON is read as such.
	Stream bool
	// MaxCompletionTokens sends the cap as max_completion_tokens, which OpenAI's
	// reasoning models require, instead of max_tokens, which every compatible
	// server understands.
	MaxCompletionTokens bool
	// HTTPClient defaults to a client without a timeout: a long generation is not a
	// failure. Bound a call with the context's deadline.
	HTTPClient *http.Client
	Observer   Observer
	Prices     PriceTable
	Clock      Clock
	// MaxResponseBytes caps a body or a whole stream; default 32 MiB.
	MaxResponseBytes int64
	// StreamIdleTimeout ends a stream that sends nothing for this long after its
	// headers; default 2 minutes.
	StreamIdleTimeout time.Duration
}

// OpenAI is a Client for the OpenAI Chat Completions protocol. It is safe for
// concurrent use; each Complete is one HTTP request.
type OpenAI struct {
	cfg OpenAIConfig
	tr  transport
}

// NewOpenAI checks cfg and returns the adapter.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	tr, err := newTransport(cfg.Provider, cfg.BaseURL, "/chat/completions", cfg.APIKey, cfg.HTTPClient,
		cfg.Clock, cfg.Observer, cfg.Prices, cfg.MaxResponseBytes, cfg.StreamIdleTimeout)
	if err != nil {
		return nil, err
	}
	return &OpenAI{cfg: cfg, tr: tr}, nil
}

// Provider returns the name this adapter reports in Meta and errors.
func (c *OpenAI) Provider() string { return c.cfg.Provider }

// Complete sends req to POST {BaseURL}/chat/completions.
func (c *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	body, names, err := encodeOpenAI(req, c.cfg.Stream, c.cfg.MaxCompletionTokens)
	if err != nil {
		return Response{}, err
	}
	h := jsonHeaders(c.cfg.Stream)
	if !c.cfg.APIKey.IsZero() {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey.Reveal())
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
		err := x.statusError(resp, parseOpenAIError)
		return Response{Meta: x.meta}, err
	}
	if c.cfg.Stream && isEventStream(resp) {
		return readOpenAIStream(ctx, sctx, x, arm(resp.Body), names)
	}
	x.meta.Streamed = false
	return readOpenAIJSON(sctx, x, resp, names)
}
