package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/model/modeltest"
)

const plantedKey = "sk-planted-3f9c0d7e1b2a4c6d8e0f"

// echoServer answers every request with the given status and a body that quotes
// the key it was sent, as a buggy or hostile endpoint might, in the protocol's
// error format, and records that the key did arrive.
func echoServer(t *testing.T, status int, anthropic bool) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key")
		if key == "" {
			key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		mu.Lock()
		seen = append(seen, key)
		mu.Unlock()
		w.Header().Set("x-request-id", "req-"+key)
		w.Header().Set("Content-Type", "application/json")
		if status == http.StatusOK { // a success that echoes the key everywhere
			args := `{"k":"` + key + `"}`
			if anthropic {
				json.NewEncoder(w).Encode(map[string]any{"id": "msg_" + key, "type": "message", "role": "assistant", "model": key,
					"content": []any{map[string]any{"type": "text", "text": "your key is " + key},
						map[string]any{"type": "tool_use", "id": "toolu_" + key, "name": key, "input": json.RawMessage(args)}},
					"stop_reason": "tool_use", "usage": map[string]int{"input_tokens": 1, "output_tokens": 1}})
			} else {
				json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-" + key, "model": key,
					"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
						"role": "assistant", "content": "your key is " + key, "tool_calls": []any{map[string]any{
							"id": "call_" + key, "type": "function", "function": map[string]any{"name": key, "arguments": args + "x"}}}}}},
					"usage": map[string]int{"prompt_tokens": 1, "completion_tokens": 1}})
			}
			return
		}
		msg := "Incorrect API key provided: " + key + " (type " + key + ")"
		if anthropic {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error " + key, "message": msg}})
			return
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": key, "code": key}})
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// TestSecretNeverLeaks plants a key and looks for it in every error string (all
// verbs), every observer record, every retry event and the JSON and fmt output of
// every exported struct the package hands out or is configured with.
func TestSecretNeverLeaks(t *testing.T) {
	var outputs []string
	add := func(what string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			outputs = append(outputs, what+" json: "+string(b))
		}
		outputs = append(outputs, fmt.Sprintf("%s: %v | %+v | %#v | %s | %q | %x", what, v, v, v, v, v, v))
	}
	var metasMu sync.Mutex
	obs := ObserverFunc(func(m Meta) {
		metasMu.Lock()
		defer metasMu.Unlock()
		add("meta", m)
	})
	key := NewSecret(plantedKey)
	var keysSent int
	for _, anthropic := range []bool{false, true} {
		for _, status := range []int{200, 400, 401, 403, 404, 429, 500, 529} {
			srv, seen := echoServer(t, status, anthropic)
			var c Client
			if anthropic {
				cfg := AnthropicConfig{BaseURL: srv.URL, APIKey: key, Observer: obs}
				a, err := NewAnthropic(cfg)
				if err != nil {
					t.Fatal(err)
				}
				add("config", cfg)
				add("client", a)
				c = a
			} else {
				cfg := OpenAIConfig{BaseURL: srv.URL, APIKey: key, Observer: obs}
				o, err := NewOpenAI(cfg)
				if err != nil {
					t.Fatal(err)
				}
				add("config", cfg)
				add("client", o)
				c = o
			}
			p := RetryPolicy{MaxAttempts: 2, Clock: modeltest.NewClock(), Rand: modeltest.FixedRand{}, OnRetry: func(e RetryEvent) { add("retry event", e) }}
			wrapped := NewTrimOnOverflow(NewRetry(NewBreaker(c, "p", BreakerPolicy{}), p))
			add("wrapped", wrapped)
			resp, err := wrapped.Complete(context.Background(), simpleRequest("m"))
			add("response", resp)
			if status == http.StatusOK {
				if err != nil || len(resp.ToolCalls) != 1 {
					t.Fatalf("echoing success: %v", err)
				}
				for _, c := range resp.ToolCalls {
					add("tool call", c)
					if c.ArgsErr != nil {
						add("args error", *c.ArgsErr)
						outputs = append(outputs, c.ArgsErr.Error())
					}
				}
				continue
			}
			if err == nil {
				t.Fatalf("status %d: no error", status)
			}
			add("error", err)
			outputs = append(outputs, err.Error())
			for e := err; e != nil; e = errors.Unwrap(e) {
				add("error chain", e)
			}
			var ae *APIError
			if errors.As(err, &ae) {
				add("api error", *ae)
			}
			for _, s := range *seen {
				if s == plantedKey {
					keysSent++
				}
			}
		}
	}
	add("secret", key)
	outputs = append(outputs, key.String(), key.GoString())
	var logBuf strings.Builder
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("config", "key", key, "cfg", OpenAIConfig{APIKey: key})
	outputs = append(outputs, logBuf.String())

	if keysSent == 0 {
		t.Fatal("the key never reached the server: the test proves nothing")
	}
	for _, out := range outputs {
		if strings.Contains(out, plantedKey) {
			t.Errorf("key leaked: %s", out)
		}
		// Fragments a provider might echo, such as the tail of the key.
		if strings.Contains(out, plantedKey[len(plantedKey)-12:]) {
			t.Errorf("part of the key leaked: %s", out)
		}
	}
	if len(outputs) < 100 {
		t.Errorf("only %d outputs inspected", len(outputs))
	}
}

func TestSecret(t *testing.T) {
	s := NewSecret("abc")
	if s.Reveal() != "abc" || s.IsZero() {
		t.Errorf("Reveal/IsZero wrong")
	}
	if !NewSecret("").IsZero() || !(Secret{}).IsZero() || (Secret{}).Reveal() != "" {
		t.Errorf("empty secret not zero")
	}
	if got := s.scrub("x abc y abc"); got != "x [redacted] y [redacted]" {
		t.Errorf("scrub = %q", got)
	}
}
