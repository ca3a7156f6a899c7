package model

import "time"

// Usage counts tokens the same way for every provider.
type Usage struct {
	// InputTokens is every prompt token the model read, cached or not (OpenAI's
	// prompt_tokens; Anthropic's input_tokens plus both cache counts).
	InputTokens int `json:"input_tokens"`
	// OutputTokens is every generated token, reasoning included.
	OutputTokens int `json:"output_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens served from
	// or written to the provider's prompt cache, when it reports them.
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Meta is the accounting record of one HTTP attempt. The adapter hands it to its
// Observer before it turns the body into messages.
type Meta struct {
	Provider string `json:"provider"`
	// Model is the model the provider says answered, else the one requested.
	Model string `json:"model"`
	// RequestID is the provider's request id from the response headers
	// (request-id, x-request-id), else from the body.
	RequestID string `json:"request_id,omitempty"`
	// ResponseID is the id of the reply in the body (chatcmpl-…, msg_…).
	ResponseID string `json:"response_id,omitempty"`
	Status     int    `json:"status"`
	// Attempt is 1-based when the call runs under Retry, else 0.
	Attempt  int   `json:"attempt,omitempty"`
	Streamed bool  `json:"streamed,omitempty"`
	Usage    Usage `json:"usage"`
	// UsageReported is false when the provider sent no usage (an error status, a
	// body that is not JSON, a stream cut before its usage event).
	UsageReported bool `json:"usage_reported"`
	// CostUSD is computed from the price table; 0 when PriceKnown is false.
	CostUSD    float64 `json:"cost_usd"`
	PriceKnown bool    `json:"price_known"`
	// Latency runs from sending the request to the end of the body or stream.
	Latency time.Duration `json:"latency_ns"`
	// TTFT runs from sending the request to the first generated text or tool call
	// of a stream; 0 when not streamed.
	TTFT time.Duration `json:"ttft_ns,omitempty"`
	// ErrorClass is ErrorClass of the error this response produced, "" if none
	// was known when the record was made.
	ErrorClass string `json:"error_class,omitempty"`
}

// Observer receives one Meta per HTTP response, before its body is parsed into
// messages. The trace recorder implements it. It is called synchronously on the
// goroutine running Complete and must not block for long.
type Observer interface {
	OnResponse(Meta)
}

// ObserverFunc lets a function be an Observer.
type ObserverFunc func(Meta)

func (f ObserverFunc) OnResponse(m Meta) { f(m) }

// Price is what a model costs in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	// CacheReadPerMTok and CacheWritePerMTok price cached input; 0 charges those
	// tokens at InputPerMTok (an overestimate for reads, an underestimate for
	// Anthropic's cache writes, so set them when caching is on).
	CacheReadPerMTok  float64 `json:"cache_read_per_mtok,omitempty"`
	CacheWritePerMTok float64 `json:"cache_write_per_mtok,omitempty"`
}

// PriceTable maps a model name, exactly as configured or as the provider reports
// it, to its price.
//
// A model missing from the table costs 0 with Meta.PriceKnown false rather than
// failing the call: the provider has already answered (and billed), so refusing the
// reply would lose work without saving money. A caller that enforces a money budget
// should check Lookup for its model before the first call and refuse to start.
type PriceTable map[string]Price

// Lookup returns the price of a model.
func (t PriceTable) Lookup(model string) (Price, bool) {
	p, ok := t[model]
	return p, ok
}

// Cost returns what usage cost on the model, and whether the model has a price.
func (t PriceTable) Cost(model string, u Usage) (usd float64, known bool) {
	p, ok := t[model]
	if !ok {
		return 0, false
	}
	return p.cost(u), true
}

func (p Price) cost(u Usage) float64 {
	read, write := p.CacheReadPerMTok, p.CacheWritePerMTok
	if read == 0 {
		read = p.InputPerMTok
	}
	if write == 0 {
		write = p.InputPerMTok
	}
	plain := max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*p.InputPerMTok +
		float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens)*write +
		float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// price finds the price under the requested name first, then under the name the
// provider reported (which is often a dated variant such as gpt-4o-2024-08-06).
func (t PriceTable) price(requested, reported string) (Price, bool) {
	if p, ok := t[requested]; ok {
		return p, true
	}
	p, ok := t[reported]
	return p, ok
}
