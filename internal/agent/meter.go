package agent

import (
	"sync"

	"github.com/agentbox/agentbox/internal/model"
)

// Meter is the model.Observer (and Retry OnRetry hook) of a model client stack. A
// ModelPolicy attaches its session to it for the duration of each request, so each
// HTTP response is recorded and paid for as it arrives, before it is parsed.
//
// model.Observer carries no request context, so a Meter serves one request at a
// time: build one client stack (and Meter) per concurrently running session.
type Meter struct {
	mu      sync.Mutex
	onResp  func(model.Meta)
	onRetry func(model.RetryEvent)
}

// OnResponse implements model.Observer.
func (m *Meter) OnResponse(meta model.Meta) {
	m.mu.Lock()
	f := m.onResp
	m.mu.Unlock()
	if f != nil {
		f(meta)
	}
}

// OnRetry is model.RetryPolicy.OnRetry.
func (m *Meter) OnRetry(ev model.RetryEvent) {
	m.mu.Lock()
	f := m.onRetry
	m.mu.Unlock()
	if f != nil {
		f(ev)
	}
}

func (m *Meter) attach(resp func(model.Meta), retry func(model.RetryEvent)) (detach func()) {
	m.mu.Lock()
	m.onResp, m.onRetry = resp, retry
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		m.onResp, m.onRetry = nil, nil
		m.mu.Unlock()
	}
}
