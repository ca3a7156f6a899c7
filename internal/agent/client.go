package agent

import (
	"fmt"
	"net/http"

	"github.com/agentbox/agentbox/internal/model"
)

// ClientConfig describes a model endpoint. cmd/ fills it; the key comes from the
// coordinator's environment or configuration and goes nowhere but the adapter.
type ClientConfig struct {
	// Provider is "openai" (Chat Completions, any compatible base URL) or
	// "anthropic" (Messages).
	Provider string
	BaseURL  string
	APIKey   model.Secret
	Stream   bool
	Prices   model.PriceTable
	// HTTPClient, Clock and Rand default to the real ones; tests inject fakes.
	HTTPClient *http.Client
	Clock      model.Clock
	Rand       model.Rand
	Retry      model.RetryPolicy
	Breaker    model.BreakerPolicy
}

// NewClient builds the stack a ModelPolicy uses —
// TrimOnOverflow(Retry(Breaker(adapter))) — with a Meter observing every response
// and retry.
func NewClient(c ClientConfig) (model.Client, *Meter, error) {
	m := &Meter{}
	var adapter model.Client
	var err error
	switch c.Provider {
	case "openai":
		adapter, err = model.NewOpenAI(model.OpenAIConfig{BaseURL: c.BaseURL, APIKey: c.APIKey, Stream: c.Stream,
			HTTPClient: c.HTTPClient, Observer: m, Prices: c.Prices, Clock: c.Clock})
	case "anthropic":
		adapter, err = model.NewAnthropic(model.AnthropicConfig{BaseURL: c.BaseURL, APIKey: c.APIKey, Stream: c.Stream,
			HTTPClient: c.HTTPClient, Observer: m, Prices: c.Prices, Clock: c.Clock})
	default:
		return nil, nil, fmt.Errorf("agent: unknown model provider %q (want openai or anthropic)", c.Provider)
	}
	if err != nil {
		return nil, nil, err
	}
	bp := c.Breaker
	if bp.Clock == nil {
		bp.Clock = c.Clock
	}
	rp := c.Retry
	if rp.Clock == nil {
		rp.Clock = c.Clock
	}
	if rp.Rand == nil {
		rp.Rand = c.Rand
	}
	rp.OnRetry = m.OnRetry
	return model.NewTrimOnOverflow(model.NewRetry(model.NewBreaker(adapter, c.Provider, bp), rp)), m, nil
}
