package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreTiming drops the measured durations, which depend on the machine.
var ignoreTiming = cmpopts.IgnoreFields(Meta{}, "Latency", "TTFT")

func TestOpenAIReplies(t *testing.T) {
	hdr := map[string]string{"x-request-id": "req_openai_1"}
	cases := []struct {
		name   string
		file   string
		stream bool
		model  string
		want   Response
	}{
		{
			name: "text", file: "openai/text.json", model: "gpt-4.1",
			want: Response{Text: "The test passes now: calc.add returns a + b.", StopReason: StopEnd, RawStopReason: "stop",
				Meta: Meta{Provider: "openai", Model: "gpt-4.1-2025-04-14", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", Status: 200,
					Usage:         Usage{InputTokens: 1117, OutputTokens: 13, CacheReadTokens: 1024},
					UsageReported: true, PriceKnown: true,
					CostUSD: (93*2 + 1024*0.5 + 13*8) / 1e6}},
		},
		{
			name: "one tool call", file: "openai/tool_call.json", model: "gpt-4.1",
			want: Response{StopReason: StopToolUse, RawStopReason: "tool_calls",
				ToolCalls: []ToolCall{{ID: "call_Nv0bOAvH6IkkOEnLe7MTSRUx", Name: "fs.read", Args: json.RawMessage(`{"path":"calc.py"}`)}},
				Meta: Meta{Provider: "openai", Model: "gpt-4.1-2025-04-14", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", Status: 200,
					Usage: Usage{InputTokens: 412, OutputTokens: 17}, UsageReported: true, PriceKnown: true,
					CostUSD: (412*2 + 17*8) / 1e6}},
		},
		{
			name: "parallel tool calls", file: "openai/tool_calls_parallel.json", model: "gpt-4.1",
			want: Response{Text: "Reading the file and running the tests.", StopReason: StopToolUse, RawStopReason: "tool_calls",
				ToolCalls: []ToolCall{
					{ID: "call_4pRpvUhzTVz1jNcBgn4TEZUg", Name: "fs.read", Args: json.RawMessage(`{"path":"calc.py"}`)},
					{ID: "call_tdj2XdwAqHCEYbK1E3p8TXZc", Name: "test.run", Args: json.RawMessage(`{"cmd":["pytest","-q"]}`)},
				},
				Meta: Meta{Provider: "openai", Model: "gpt-4.1-2025-04-14", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeH", Status: 200,
					Usage: Usage{InputTokens: 412, OutputTokens: 52}, UsageReported: true, PriceKnown: true,
					CostUSD: (412*2 + 52*8) / 1e6}},
		},
		{
			// The bad calls come back as per-call errors, the good one as usual; the
			// model has no price, so the cost is 0 and flagged unknown.
			name: "malformed tool arguments", file: "openai/malformed_args.json", model: "Qwen/Qwen2.5-Coder-7B-Instruct",
			want: Response{StopReason: StopToolUse, RawStopReason: "tool_calls",
				ToolCalls: []ToolCall{
					{ID: "chatcmpl-tool-0a1b2c3d", Name: "fs.read", ArgsErr: &ArgsError{Raw: `{"path": "calc.py"`, Offset: 18, Reason: "unexpected end of JSON input"}},
					{ID: "chatcmpl-tool-4e5f6a7b", Name: "test.run", Args: json.RawMessage(`{"cmd":["pytest"]}`)},
					{ID: "chatcmpl-tool-8c9d0e1f", Name: "fs.read", ArgsErr: &ArgsError{Raw: `["calc.py"]`, Offset: -1, Reason: "got an array"}},
				},
				Meta: Meta{Provider: "openai", Model: "Qwen/Qwen2.5-Coder-7B-Instruct", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-vllm-7f3c2a9e", Status: 200,
					Usage: Usage{InputTokens: 380, OutputTokens: 41}, UsageReported: true}},
		},
		{
			name: "streamed text", file: "openai/stream_text.sse", stream: true, model: "gpt-4.1",
			want: Response{Text: "The test passes now: calc.add returns a + b.", StopReason: StopEnd, RawStopReason: "stop",
				Meta: Meta{Provider: "openai", Model: "gpt-4.1-2025-04-14", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-BbTBDzZc8PQvsOAyE2r6b7XMjwxK9", Status: 200, Streamed: true,
					Usage: Usage{InputTokens: 1117, OutputTokens: 13, CacheReadTokens: 1024}, UsageReported: true, PriceKnown: true,
					CostUSD: (93*2 + 1024*0.5 + 13*8) / 1e6}},
		},
		{
			name: "streamed parallel tool calls split across chunks", file: "openai/stream_tool_calls.sse", stream: true, model: "gpt-4.1",
			want: Response{StopReason: StopToolUse, RawStopReason: "tool_calls",
				ToolCalls: []ToolCall{
					{ID: "call_4pRpvUhzTVz1jNcBgn4TEZUg", Name: "fs.read", Args: json.RawMessage(`{"path":"calc.py"}`)},
					{ID: "call_tdj2XdwAqHCEYbK1E3p8TXZc", Name: "test.run", Args: json.RawMessage(`{"cmd":["pytest","-q"]}`)},
				},
				Meta: Meta{Provider: "openai", Model: "gpt-4.1-2025-04-14", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-BbTCk2tLq1m5eSxv0ZUb3fDSRsI1c", Status: 200, Streamed: true,
					Usage: Usage{InputTokens: 412, OutputTokens: 52}, UsageReported: true, PriceKnown: true,
					CostUSD: (412*2 + 52*8) / 1e6}},
		},
		{
			// No index, repeated name, "stop" with tool calls, usage in the finish
			// chunk, no [DONE].
			name: "streamed compatible-server quirks", file: "openai/stream_compat_quirks.sse", stream: true, model: "qwen2.5-coder",
			want: Response{StopReason: StopToolUse, RawStopReason: "stop",
				ToolCalls: []ToolCall{{ID: "call_q1", Name: "fs.read", Args: json.RawMessage(`{"path":"calc.py"}`)}},
				Meta: Meta{Provider: "openai", Model: "qwen2.5-coder", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-compat-1", Status: 200, Streamed: true,
					Usage: Usage{InputTokens: 300, OutputTokens: 20}, UsageReported: true}},
		},
		{
			// A server that ignores stream:true and answers with one JSON body.
			name: "stream request answered with JSON", file: "openai/text.json", stream: true, model: "gpt-4.1",
			want: Response{Text: "The test passes now: calc.add returns a + b.", StopReason: StopEnd, RawStopReason: "stop",
				Meta: Meta{Provider: "openai", Model: "gpt-4.1-2025-04-14", RequestID: "req_openai_1",
					ResponseID: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", Status: 200,
					Usage:         Usage{InputTokens: 1117, OutputTokens: 13, CacheReadTokens: 1024},
					UsageReported: true, PriceKnown: true, CostUSD: (93*2 + 1024*0.5 + 13*8) / 1e6}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer(t, step{file: tc.file, header: hdr})
			var log metaLog
			c := newTestOpenAI(t, srv.srv.URL, tc.stream, &log)
			got, err := c.Complete(context.Background(), simpleRequest(tc.model))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, ignoreTiming, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if tc.stream && got.Meta.Streamed && got.Meta.TTFT <= 0 {
				t.Errorf("streamed reply has no TTFT")
			}
			metas := log.all()
			if len(metas) != 1 {
				t.Fatalf("observer saw %d records, want 1", len(metas))
			}
			if diff := cmp.Diff(got.Meta, metas[0]); diff != "" {
				t.Errorf("observer record differs from Response.Meta (-resp +hook):\n%s", diff)
			}
			if reqs := srv.requests(); reqs[0].path != "/v1/chat/completions" {
				t.Errorf("path %q", reqs[0].path)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	cases := []struct {
		name       string
		step       step
		stream     bool
		kind       error
		noResponse bool // no HTTP response, so no accounting record
		// lateError: the error is found after the record was made, so the record
		// carries the usage but no error class.
		lateError bool
		check     func(t *testing.T, err error)
	}{
		{name: "401 authentication", step: step{status: 401, file: "openai/error_401.json", header: map[string]string{"x-request-id": "req_401"}},
			kind: ErrAuth, check: func(t *testing.T, err error) {
				ae := apiErr(t, err)
				if ae.Message != "" || ae.Code != "invalid_api_key" || ae.RequestID != "req_401" {
					t.Errorf("got %+v: want no provider message (it quotes the key), code and request id kept", ae)
				}
			}},
		{name: "403", step: step{status: 403, body: `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","code":"unsupported_country_region_territory"}}`},
			kind: ErrAuth},
		{name: "429 with Retry-After", step: step{status: 429, file: "openai/error_429.json", header: map[string]string{"Retry-After": "7"}},
			kind: ErrRateLimited, check: wantRetryAfter(7 * time.Second)},
		{name: "429 with retry-after-ms", step: step{status: 429, file: "openai/error_429.json", header: map[string]string{"retry-after-ms": "1500", "Retry-After": "2"}},
			kind: ErrRateLimited, check: wantRetryAfter(1500 * time.Millisecond)},
		{name: "500", step: step{status: 500, file: "openai/error_500.json"}, kind: ErrUnavailable},
		{name: "502 with an HTML page", step: step{status: 502, body: "<html><body>" + strings.Repeat("Bad Gateway ", 200) + "</body></html>"},
			kind: ErrUnavailable, check: func(t *testing.T, err error) {
				if n := len(apiErr(t, err).Message); n > maxProviderMessage+len("…") {
					t.Errorf("provider message of %d bytes not cut", n)
				}
			}},
		{name: "529 overloaded", step: step{status: 529, body: `{"error":{"message":"Overloaded","type":"overloaded_error"}}`}, kind: ErrUnavailable},
		{name: "context overflow (OpenAI)", step: step{status: 400, file: "openai/error_context_openai.json"},
			kind: ErrContextOverflow, check: wantOverflow(128000, 130532)},
		{name: "context overflow (vLLM)", step: step{status: 400, file: "openai/error_context_vllm.json"},
			kind: ErrContextOverflow, check: wantOverflow(4096, 5000)},
		{name: "context overflow (llama.cpp)", step: step{status: 400, file: "openai/error_context_llamacpp.json"},
			kind: ErrContextOverflow, check: wantOverflow(4096, 5000)},
		{name: "404 unknown model (Ollama)", step: step{status: 404, file: "openai/error_404_ollama.json"}, kind: ErrBadRequest,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "not found, try pulling it first") {
					t.Errorf("provider message lost: %v", err)
				}
			}},
		{name: "400 plain", step: step{status: 400, body: `{"error":{"message":"Invalid 'messages[1].tool_calls[0].function.name'","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`},
			kind: ErrBadRequest},
		{name: "malformed JSON body", step: step{file: "openai/malformed_body.json", header: map[string]string{"x-request-id": "req_bad"}},
			kind: ErrBadResponse, check: func(t *testing.T, err error) {
				var re *ResponseError
				if !errors.As(err, &re) || re.RequestID != "req_bad" {
					t.Errorf("want a ResponseError naming req_bad, got %v", err)
				}
			}},
		{
			// The reply is accounted for before its messages are parsed: the
			// record has the usage although parsing then fails.
			name: "empty choices", step: step{body: `{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}`},
			kind: ErrBadResponse, lateError: true,
		},
		{name: "stream cut before [DONE]", step: step{file: "openai/stream_truncated.sse"}, stream: true, kind: ErrNetwork},
		{name: "error inside a stream", step: step{file: "openai/stream_error.sse"}, stream: true, kind: ErrUnavailable},
		{name: "stream with a broken chunk", step: step{body: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json}\n\n", header: map[string]string{"Content-Type": "text/event-stream"}},
			stream: true, kind: ErrBadResponse},
		{name: "connection closed without a reply", step: step{hangup: true}, kind: ErrNetwork, noResponse: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer(t, tc.step)
			var log metaLog
			c := newTestOpenAI(t, srv.srv.URL, tc.stream, &log)
			resp, err := c.Complete(context.Background(), simpleRequest("gpt-4.1"))
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
			metas := log.all()
			if tc.noResponse {
				if len(metas) != 0 {
					t.Errorf("observer saw %d records for a request that got no response", len(metas))
				}
				return
			}
			if len(metas) != 1 {
				t.Fatalf("observer saw %d records, want exactly 1", len(metas))
			}
			if tc.lateError {
				if metas[0].ErrorClass != "" || !metas[0].UsageReported || metas[0].Usage.InputTokens != 5 {
					t.Errorf("record %+v: want the usage, recorded before the parse failed", metas[0])
				}
			} else if metas[0].ErrorClass != ErrorClass(err) {
				t.Errorf("record says error class %q, the error is %q", metas[0].ErrorClass, ErrorClass(err))
			}
			if diff := cmp.Diff(metas[0], resp.Meta); diff != "" {
				t.Errorf("Response.Meta on error differs from the record:\n%s", diff)
			}
		})
	}
}

func apiErr(t *testing.T, err error) *APIError {
	t.Helper()
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("%v is not an APIError", err)
	}
	return ae
}

func wantRetryAfter(d time.Duration) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		if got := apiErr(t, err).RetryAfter; got != d {
			t.Errorf("RetryAfter = %v, want %v", got, d)
		}
	}
}

func wantOverflow(limit, requested int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		ae := apiErr(t, err)
		if ae.ContextLimit != limit || ae.RequestedTokens != requested {
			t.Errorf("limit/requested = %d/%d, want %d/%d", ae.ContextLimit, ae.RequestedTokens, limit, requested)
		}
	}
}
