package model

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const claude = "claude-sonnet-4-20250514"

func TestAnthropicReplies(t *testing.T) {
	hdr := map[string]string{"request-id": "req_ant_1"}
	threeCalls := []ToolCall{
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "fs.read", Args: json.RawMessage(`{"path":"calc.py"}`)},
		{ID: "toolu_01LTZ4YZ7hSmdGzuS1KvwCyR", Name: "test.run", Args: json.RawMessage(`{"cmd":["pytest","-q"]}`)},
		{ID: "toolu_01NoArgs0000000000000000", Name: "git.status", Args: json.RawMessage(`{}`)},
	}
	cases := []struct {
		name   string
		file   string
		stream bool
		want   Response
	}{
		{
			// Anthropic's input_tokens excludes cached tokens; Usage.InputTokens
			// includes them.
			name: "text", file: "anthropic/text.json",
			want: Response{Text: "The test passes now: calc.add returns a + b.", StopReason: StopEnd, RawStopReason: "end_turn",
				Meta: Meta{Provider: "anthropic", Model: claude, RequestID: "req_ant_1", ResponseID: "msg_01XFDUDYJgAACzvnptvVoYEL",
					Status: 200, Usage: Usage{InputTokens: 2095, OutputTokens: 15, CacheReadTokens: 1800}, UsageReported: true,
					PriceKnown: true, CostUSD: (295*3 + 1800*0.3 + 15*15) / 1e6}},
		},
		{
			name: "text and one tool call", file: "anthropic/tool_use.json",
			want: Response{Text: "I'll read the file first.", StopReason: StopToolUse, RawStopReason: "tool_use",
				ToolCalls: []ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "fs.read", Args: json.RawMessage(`{"path":"calc.py"}`)}},
				Meta: Meta{Provider: "anthropic", Model: claude, RequestID: "req_ant_1", ResponseID: "msg_01Aq9w938a90dw8q",
					Status: 200, Usage: Usage{InputTokens: 1536, OutputTokens: 71, CacheWriteTokens: 1024}, UsageReported: true,
					PriceKnown: true, CostUSD: (512*3 + 1024*3.75 + 71*15) / 1e6}},
		},
		{
			name: "parallel tool calls", file: "anthropic/tool_use_parallel.json",
			want: Response{StopReason: StopToolUse, RawStopReason: "tool_use", ToolCalls: threeCalls,
				Meta: Meta{Provider: "anthropic", Model: claude, RequestID: "req_ant_1", ResponseID: "msg_01Bq9w938a90dw8r",
					Status: 200, Usage: Usage{InputTokens: 512, OutputTokens: 98}, UsageReported: true,
					PriceKnown: true, CostUSD: (512*3 + 98*15) / 1e6}},
		},
		{
			name: "streamed text", file: "anthropic/stream_text.sse", stream: true,
			want: Response{Text: "The test passes now: calc.add returns a + b.", StopReason: StopEnd, RawStopReason: "end_turn",
				Meta: Meta{Provider: "anthropic", Model: claude, RequestID: "req_ant_1", ResponseID: "msg_01StreamText000000000",
					Status: 200, Streamed: true, Usage: Usage{InputTokens: 2095, OutputTokens: 15, CacheReadTokens: 1800},
					UsageReported: true, PriceKnown: true, CostUSD: (295*3 + 1800*0.3 + 15*15) / 1e6}},
		},
		{
			name: "streamed tool calls split across deltas", file: "anthropic/stream_tool_use.sse", stream: true,
			want: Response{Text: "Reading the file and running the tests.", StopReason: StopToolUse, RawStopReason: "tool_use",
				ToolCalls: threeCalls,
				Meta: Meta{Provider: "anthropic", Model: claude, RequestID: "req_ant_1", ResponseID: "msg_01StreamTools00000000",
					Status: 200, Streamed: true, Usage: Usage{InputTokens: 512, OutputTokens: 98}, UsageReported: true,
					PriceKnown: true, CostUSD: (512*3 + 98*15) / 1e6}},
		},
		{
			name: "streamed malformed arguments", file: "anthropic/stream_malformed_args.sse", stream: true,
			want: Response{StopReason: StopToolUse, RawStopReason: "tool_use",
				ToolCalls: []ToolCall{
					{ID: "toolu_01BadArgs", Name: "fs.read", ArgsErr: &ArgsError{Raw: `{"path": "calc.py"`, Offset: 18, Reason: "unexpected end of JSON input"}},
					{ID: "toolu_01GoodArgs", Name: "test.run", Args: json.RawMessage(`{"cmd":["pytest"]}`)},
				},
				Meta: Meta{Provider: "anthropic", Model: claude, RequestID: "req_ant_1", ResponseID: "msg_01StreamBadArgs0000000",
					Status: 200, Streamed: true, Usage: Usage{InputTokens: 512, OutputTokens: 40}, UsageReported: true,
					PriceKnown: true, CostUSD: (512*3 + 40*15) / 1e6}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer(t, step{file: tc.file, header: hdr})
			var log metaLog
			c := newTestAnthropic(t, srv.srv.URL, tc.stream, &log)
			got, err := c.Complete(context.Background(), simpleRequest(claude))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, ignoreTiming, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if tc.stream && got.Meta.TTFT <= 0 {
				t.Errorf("streamed reply has no TTFT")
			}
			metas := log.all()
			if len(metas) != 1 {
				t.Fatalf("observer saw %d records, want 1", len(metas))
			}
			if diff := cmp.Diff(got.Meta, metas[0]); diff != "" {
				t.Errorf("observer record differs from Response.Meta:\n%s", diff)
			}
			r := srv.requests()[0]
			if r.path != "/v1/messages" || r.header.Get("x-api-key") != "sk-ant-test-key" || r.header.Get("anthropic-version") != "2023-06-01" {
				t.Errorf("request path %q, headers %v", r.path, r.header)
			}
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	cases := []struct {
		name   string
		step   step
		stream bool
		kind   error
		check  func(t *testing.T, err error)
	}{
		{name: "401", step: step{status: 401, file: "anthropic/error_401.json"}, kind: ErrAuth,
			check: func(t *testing.T, err error) {
				if ae := apiErr(t, err); ae.Message != "" || ae.RequestID != "req_011CSHoEeqs5C35K2UUqR7Fy" {
					t.Errorf("got %+v: want no provider text and the request id from the body", ae)
				}
			}},
		{name: "429 with Retry-After", step: step{status: 429, file: "anthropic/error_429.json", header: map[string]string{"retry-after": "12"}},
			kind: ErrRateLimited, check: wantRetryAfter(12e9)},
		{name: "500", step: step{status: 500, file: "anthropic/error_500.json"}, kind: ErrUnavailable},
		{name: "529 overloaded", step: step{status: 529, file: "anthropic/error_529.json"}, kind: ErrUnavailable},
		{name: "prompt too long", step: step{status: 400, file: "anthropic/error_context.json"},
			kind: ErrContextOverflow, check: wantOverflow(200000, 208310)},
		{name: "input plus max_tokens too long", step: step{status: 400, file: "anthropic/error_context_maxtokens.json"},
			kind: ErrContextOverflow, check: wantOverflow(200000, 188240+21333)},
		{name: "413 request too large", step: step{status: 413, body: `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`},
			kind: ErrContextOverflow},
		{name: "400 broken conversation", step: step{status: 400, file: "anthropic/error_400.json"}, kind: ErrBadRequest},
		{name: "malformed JSON body", step: step{file: "anthropic/malformed_body.json"}, kind: ErrBadResponse},
		{name: "overloaded inside a stream", step: step{file: "anthropic/stream_overloaded.sse"}, stream: true, kind: ErrUnavailable,
			check: func(t *testing.T, err error) {
				if ae := apiErr(t, err); ae.Type != "overloaded_error" || ae.Status != 0 {
					t.Errorf("got %+v", ae)
				}
			}},
		{name: "stream cut before message_stop", step: step{file: "anthropic/stream_truncated.sse"}, stream: true, kind: ErrNetwork},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer(t, tc.step)
			var log metaLog
			c := newTestAnthropic(t, srv.srv.URL, tc.stream, &log)
			resp, err := c.Complete(context.Background(), simpleRequest(claude))
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
			metas := log.all()
			if len(metas) != 1 || metas[0].ErrorClass != ErrorClass(err) {
				t.Fatalf("records %+v: want exactly one, with class %q", metas, ErrorClass(err))
			}
			if tc.stream && (!metas[0].UsageReported || metas[0].Usage.InputTokens != 512) {
				// message_start reported the input before the stream broke: the
				// provider may bill it, so the record keeps it.
				t.Errorf("a broken stream lost the usage of message_start: %+v", metas[0])
			}
			if diff := cmp.Diff(metas[0], resp.Meta); diff != "" {
				t.Errorf("Response.Meta on error differs from the record:\n%s", diff)
			}
		})
	}
}

// A tool without parameters streams no input_json_delta at all; the call must
// still come back with {} (covered by git_status in stream_tool_use.sse). And a
// conversation starting with an assistant message cannot be sent.
func TestAnthropicRefusesWhatTheAPIRejects(t *testing.T) {
	cases := []struct {
		name string
		msgs []Message
	}{
		{"starts with assistant", []Message{{Role: RoleAssistant, Text: "hi"}, {Role: RoleUser, Text: "go"}}},
		{"system message mid-conversation", []Message{{Role: RoleUser, Text: "go"}, {Role: RoleSystem, Text: "late"}}},
		{"only system messages", []Message{{Role: RoleSystem, Text: "x"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := encodeAnthropic(Request{Model: claude, Messages: tc.msgs}, false, 100)
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("err = %v, want ErrBadRequest", err)
			}
		})
	}
}
