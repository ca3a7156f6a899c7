package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The response side of OpenAI Chat Completions, non-streamed, and its errors.

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u oaUsage) usage() Usage {
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CacheReadTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// oaHead is the part of a reply needed for accounting; it is decoded on its own,
// before the rest, so a reply whose messages do not parse is still accounted for.
type oaHead struct {
	ID    string   `json:"id"`
	Model string   `json:"model"`
	Usage *oaUsage `json:"usage"`
}

type oaResponse struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func readOpenAIJSON(ctx context.Context, x *exchange, resp *http.Response, names toolNames) (Response, error) {
	data, err := x.readBody(ctx, resp)
	if err != nil {
		return Response{Meta: x.meta}, err
	}
	var head oaHead
	if err := json.Unmarshal(data, &head); err != nil {
		err = x.badResponse(fmt.Errorf("body is not a JSON object: %w", err))
		return Response{Meta: x.report(err)}, err
	}
	x.setIDs(head.ID, head.Model)
	if head.Usage != nil {
		x.setUsage(head.Usage.usage())
	}
	meta := x.report(nil)

	var body oaResponse
	if err := json.Unmarshal(data, &body); err != nil {
		return Response{Meta: meta}, x.badResponse(err)
	}
	if len(body.Choices) == 0 {
		return Response{Meta: meta}, x.badResponse(errors.New("no choices"))
	}
	ch := body.Choices[0]
	text, err := oaContent(ch.Message.Content)
	if err != nil {
		return Response{Meta: meta}, x.badResponse(err)
	}
	out := Response{Text: text, Meta: meta, RawStopReason: ch.FinishReason}
	if ch.Message.Refusal != nil && *ch.Message.Refusal != "" {
		out.Text = *ch.Message.Refusal
		out.StopReason = StopRefusal
	}
	for i, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, newCall(tc.ID, i, names.local(tc.Function.Name), oaArgs(tc.Function.Arguments)))
	}
	if out.StopReason == "" {
		out.StopReason = oaStop(ch.FinishReason, len(out.ToolCalls) > 0)
	}
	x.scrubResponse(&out)
	return out, nil
}

// oaContent accepts content as a string, null, or an array of text parts.
func oaContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("message content: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// oaArgs returns the arguments' text: the protocol sends a JSON string, but some
// servers send the object itself.
func oaArgs(raw json.RawMessage) []byte {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []byte(s)
	}
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// newCall builds a ToolCall, giving an id to a call that came without one (some
// local servers omit it) so its result can still be matched.
func newCall(id string, index int, name string, rawArgs []byte) ToolCall {
	if id == "" {
		id = "call_" + strconv.Itoa(index)
	}
	c := ToolCall{ID: id, Name: name}
	c.Args, c.ArgsErr = parseArgs(rawArgs)
	return c
}

// oaStop maps finish_reason. llama.cpp and Ollama say "stop" even when the reply
// holds tool calls; the calls are what matter.
func oaStop(reason string, calls bool) StopReason {
	switch reason {
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopMaxTokens
	case "content_filter":
		return StopRefusal
	case "stop", "":
		if calls {
			return StopToolUse
		}
		if reason == "" {
			return StopOther
		}
		return StopEnd
	}
	return StopOther
}

type oaErrorBody struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	// llama.cpp states the sizes of an overflow in the error itself.
	NPromptTokens int `json:"n_prompt_tokens"`
	NCtx          int `json:"n_ctx"`
}

var (
	oaOverflowRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)maximum context length|context length exceeded|context_length_exceeded|exceeds the available context size|context window|prompt is too long|too many tokens`)
	})
	oaLimitRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)maximum context length is (\d+)`) })
	oaRequestedRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:requested|resulted in|requested about) (\d+) tokens`)
	})
)

// parseOpenAIError reads {"error": {...}} (OpenAI, OpenRouter, llama.cpp, newer
// vLLM) or the bare {"object":"error", ...} of older vLLM.
func parseOpenAIError(status int, body []byte) providerError {
	var wrapped struct {
		Error json.RawMessage `json:"error"`
	}
	var e oaErrorBody
	if json.Unmarshal(body, &wrapped) == nil && len(wrapped.Error) > 0 && wrapped.Error[0] == '{' {
		_ = json.Unmarshal(wrapped.Error, &e)
	} else if json.Unmarshal(body, &e) != nil || e.Message == "" {
		if len(wrapped.Error) > 0 { // {"error": "text"} (Ollama)
			_ = json.Unmarshal(wrapped.Error, &e.Message)
		} else {
			e.Message = strings.TrimSpace(string(body))
		}
	}
	pe := providerError{Type: e.Type, Code: jsonScalar(e.Code), Message: e.Message}
	if status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != 401 && status != 403 {
		pe.overflow = pe.Code == "context_length_exceeded" || e.Type == "exceed_context_size_error" ||
			oaOverflowRE().MatchString(e.Message)
	}
	if pe.overflow {
		pe.limit, pe.requested = e.NCtx, e.NPromptTokens
		if m := oaLimitRE().FindStringSubmatch(e.Message); m != nil {
			pe.limit, _ = strconv.Atoi(m[1])
		}
		if m := oaRequestedRE().FindStringSubmatch(e.Message); m != nil {
			pe.requested, _ = strconv.Atoi(m[1])
		}
	}
	return pe
}

// jsonScalar renders a code that may be a string, a number or null.
func jsonScalar(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
