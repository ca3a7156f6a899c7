package model

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// step is one canned HTTP reply of a fixtureServer: a file from testdata (whose
// extension picks the content type) or a literal body.
type step struct {
	status int
	file   string
	body   string
	header map[string]string
	// hangup closes the connection without any reply.
	hangup bool
}

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// fixtureServer replays steps in order and records every request; a request
// beyond the last step fails the test.
type fixtureServer struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	steps []step
	reqs  []recorded
}

func newFixtureServer(t *testing.T, steps ...step) *fixtureServer {
	t.Helper()
	f := &fixtureServer{t: t, steps: steps}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixtureServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
	f.mu.Unlock()
	if n >= len(f.steps) {
		f.t.Errorf("unexpected request %d to %s (only %d scripted)", n+1, r.URL.Path, len(f.steps))
		http.Error(w, "no more steps", http.StatusTeapot)
		return
	}
	s := f.steps[n]
	if s.hangup {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	data := []byte(s.body)
	ct := "application/json"
	if s.file != "" {
		var err error
		data, err = os.ReadFile(filepath.Join("testdata", s.file))
		if err != nil {
			f.t.Errorf("fixture: %v", err)
		}
		if strings.HasSuffix(s.file, ".sse") {
			ct = "text/event-stream; charset=utf-8"
		}
	}
	w.Header().Set("Content-Type", ct)
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	status := s.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(data)
}

func (f *fixtureServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// metaLog is an Observer that keeps every Meta.
type metaLog struct {
	mu    sync.Mutex
	metas []Meta
}

func (l *metaLog) OnResponse(m Meta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.metas = append(l.metas, m)
}

func (l *metaLog) all() []Meta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Meta(nil), l.metas...)
}

var testPrices = PriceTable{
	"gpt-4.1":                  {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.5},
	"claude-sonnet-4-20250514": {InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75},
}

func newTestOpenAI(t *testing.T, url string, stream bool, obs Observer) *OpenAI {
	return newTestOpenAIClock(t, url, stream, obs, nil)
}

func newTestOpenAIClock(t *testing.T, url string, stream bool, obs Observer, clock Clock) *OpenAI {
	t.Helper()
	c, err := NewOpenAI(OpenAIConfig{BaseURL: url + "/v1", APIKey: NewSecret("sk-test-key"), Stream: stream,
		Observer: obs, Prices: testPrices, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newTestAnthropic(t *testing.T, url string, stream bool, obs Observer) *Anthropic {
	return newTestAnthropicClock(t, url, stream, obs, nil)
}

func newTestAnthropicClock(t *testing.T, url string, stream bool, obs Observer, clock Clock) *Anthropic {
	t.Helper()
	c, err := NewAnthropic(AnthropicConfig{BaseURL: url, APIKey: NewSecret("sk-ant-test-key"), Stream: stream,
		Observer: obs, Prices: testPrices, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// simpleRequest is a one-question conversation offering the tools the fixtures use.
func simpleRequest(model string) Request {
	return Request{
		Model:    model,
		System:   "You fix bugs.",
		Messages: []Message{{Role: RoleUser, Text: "Fix calc.add."}},
		Tools: []ToolDef{
			{Name: "fs.read", Description: "Read a file.", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "test.run", Description: "Run the tests."},
			{Name: "git.status", Description: "Show the status."},
		},
	}
}
