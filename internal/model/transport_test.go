package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		base string
		ok   bool
		url  string
	}{
		{"https://api.openai.com/v1", true, "https://api.openai.com/v1/chat/completions"},
		{"http://127.0.0.1:8000/v1/", true, "http://127.0.0.1:8000/v1/chat/completions"},
		{"", false, ""},
		{"ftp://host/v1", false, ""},
		{"localhost:8000", false, ""},
		{"https://user:pass@host/v1", false, ""},
	} {
		c, err := NewOpenAI(OpenAIConfig{BaseURL: tc.base})
		if tc.ok != (err == nil) {
			t.Errorf("%q: err = %v, want ok=%v", tc.base, err, tc.ok)
			continue
		}
		if err == nil && c.tr.url != tc.url {
			t.Errorf("%q: url %q, want %q", tc.base, c.tr.url, tc.url)
		}
		if err != nil && strings.Contains(err.Error(), "pass") {
			t.Errorf("error quotes the credentials: %v", err)
		}
	}
	a, err := NewAnthropic(AnthropicConfig{})
	if err != nil || a.tr.url != "https://api.anthropic.com/v1/messages" {
		t.Errorf("default Anthropic URL: %v %v", a, err)
	}
}

// A local server needs no key: no Authorization header is sent at all.
func TestNoKeyNoHeader(t *testing.T) {
	srv := newFixtureServer(t, step{file: "openai/text.json"})
	c, err := NewOpenAI(OpenAIConfig{BaseURL: srv.srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), simpleRequest("m")); err != nil {
		t.Fatal(err)
	}
	if h := srv.requests()[0].header; h.Get("Authorization") != "" {
		t.Errorf("Authorization sent without a key: %q", h.Get("Authorization"))
	}
}

// A stream that stops sending without closing ends with a network error after
// the idle timeout instead of hanging.
func TestStreamIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var log metaLog
	c, _ := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Stream: true, StreamIdleTimeout: 150 * time.Millisecond, Observer: &log})
	// The server never sends more nor closes: only the idle timeout ends the call.
	_, err := c.Complete(context.Background(), simpleRequest("m"))
	if !errors.Is(err, ErrNetwork) || !errors.Is(err, errStreamIdle) || !Retryable(err) {
		t.Fatalf("err = %v, want a retryable idle-timeout network error", err)
	}
	if m := log.all(); len(m) != 1 || m[0].ErrorClass != "network" {
		t.Errorf("records %+v", m)
	}
}

// The caller's cancellation during a stream is cancellation, not a network error
// to retry.
func TestStreamCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":9}}}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var log metaLog
	c, _ := NewAnthropic(AnthropicConfig{BaseURL: srv.URL, Stream: true, Observer: ObserverFunc(func(m Meta) { log.OnResponse(m) })})
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, err := c.Complete(ctx, simpleRequest("m"))
	if !errors.Is(err, context.Canceled) || Retryable(err) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if m := log.all(); len(m) != 1 || m[0].Usage.InputTokens != 9 || m[0].ErrorClass != "canceled" {
		t.Errorf("records %+v: want the input usage of the cancelled stream", m)
	}
}

func TestResponseSizeLimit(t *testing.T) {
	for _, stream := range []bool{false, true} {
		file := "openai/text.json"
		if stream {
			file = "openai/stream_text.sse"
		}
		srv := newFixtureServer(t, step{file: file})
		c, _ := NewOpenAI(OpenAIConfig{BaseURL: srv.srv.URL, Stream: stream, MaxResponseBytes: 200})
		_, err := c.Complete(context.Background(), simpleRequest("m"))
		if !errors.Is(err, ErrBadResponse) {
			t.Errorf("stream=%v: err = %v, want ErrBadResponse", stream, err)
		}
	}
}

// A redirect is not followed, so the key never reaches the host it points to.
func TestRedirectNotFollowed(t *testing.T) {
	var leaked []string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("x-api-key")+r.Header.Get("Authorization"))
	}))
	defer evil.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+"/v1/messages", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	a, _ := NewAnthropic(AnthropicConfig{BaseURL: redirect.URL, APIKey: NewSecret("sk-ant-redirect")})
	o, _ := NewOpenAI(OpenAIConfig{BaseURL: redirect.URL, APIKey: NewSecret("sk-redirect")})
	for _, c := range []Client{a, o} {
		_, err := c.Complete(context.Background(), simpleRequest("m"))
		if ae := apiErr(t, err); ae.Status != http.StatusTemporaryRedirect || !errors.Is(err, ErrBadRequest) {
			t.Errorf("err = %v, want the 307 as ErrBadRequest", err)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("redirect followed; the target saw %q", leaked)
	}
}
