package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The response side of the Anthropic Messages API, non-streamed, and its errors.

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// usage converts to Usage, whose InputTokens include both cache counts (Anthropic's
// input_tokens excludes them).
func (u anUsage) usage() Usage {
	return Usage{
		InputTokens:      u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}
}

type anHead struct {
	ID    string   `json:"id"`
	Model string   `json:"model"`
	Usage *anUsage `json:"usage"`
}

type anResponse struct {
	Type       string        `json:"type"`
	Content    []anRespBlock `json:"content"`
	StopReason string        `json:"stop_reason"`
}

type anRespBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func readAnthropicJSON(ctx context.Context, x *exchange, resp *http.Response, names toolNames) (Response, error) {
	data, err := x.readBody(ctx, resp)
	if err != nil {
		return Response{Meta: x.meta}, err
	}
	var head anHead
	if err := json.Unmarshal(data, &head); err != nil {
		err = x.badResponse(fmt.Errorf("body is not a JSON object: %w", err))
		return Response{Meta: x.report(err)}, err
	}
	x.setIDs(head.ID, head.Model)
	if head.Usage != nil {
		x.setUsage(head.Usage.usage())
	}
	meta := x.report(nil)

	var body anResponse
	if err := json.Unmarshal(data, &body); err != nil {
		return Response{Meta: meta}, x.badResponse(err)
	}
	if body.Type != "message" {
		return Response{Meta: meta}, x.badResponse(fmt.Errorf("type %q, want message", body.Type))
	}
	out := Response{Meta: meta, RawStopReason: body.StopReason, StopReason: anStop(body.StopReason)}
	var text strings.Builder
	for _, b := range body.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, newCall(b.ID, len(out.ToolCalls), names.local(b.Name), b.Input))
		}
	}
	out.Text = text.String()
	x.scrubResponse(&out)
	return out, nil
}

func anStop(reason string) StopReason {
	switch reason {
	case "end_turn", "stop_sequence":
		return StopEnd
	case "tool_use":
		return StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "refusal":
		return StopRefusal
	}
	return StopOther
}

var (
	anOverflowRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)prompt is too long|exceed(?:s|ed)? (?:the )?context (?:limit|window)|context window|too many tokens`)
	})
	anTooLongRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+) tokens > (\d+)`) })
	anSumRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+) \+ (\d+) > (\d+)`) })
)

// parseAnthropicError reads {"type":"error","error":{"type":…,"message":…},
// "request_id":…}.
func parseAnthropicError(status int, body []byte) providerError {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(body, &e) != nil || (e.Error.Type == "" && e.Error.Message == "") {
		e.Error.Message = strings.TrimSpace(string(body))
	}
	pe := providerError{Type: e.Error.Type, Message: e.Error.Message, requestID: e.RequestID}
	if status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == 0 {
		pe.overflow = e.Error.Type == "request_too_large" ||
			(e.Error.Type == "invalid_request_error" || e.Error.Type == "") && anOverflowRE().MatchString(e.Error.Message)
	}
	if pe.overflow {
		if m := anTooLongRE().FindStringSubmatch(e.Error.Message); m != nil {
			pe.requested, _ = strconv.Atoi(m[1])
			pe.limit, _ = strconv.Atoi(m[2])
		} else if m := anSumRE().FindStringSubmatch(e.Error.Message); m != nil {
			in, _ := strconv.Atoi(m[1])
			out, _ := strconv.Atoi(m[2])
			pe.requested = in + out
			pe.limit, _ = strconv.Atoi(m[3])
		}
	}
	return pe
}

// anStreamErrorKind classifies an error event inside a stream by its type.
func anStreamErrorKind(typ string, overflow bool) error {
	switch typ {
	case "rate_limit_error":
		return ErrRateLimited
	case "authentication_error", "permission_error":
		return ErrAuth
	case "invalid_request_error", "not_found_error":
		if overflow {
			return ErrContextOverflow
		}
		return ErrBadRequest
	case "request_too_large":
		return ErrContextOverflow
	}
	return ErrUnavailable // overloaded_error, api_error, anything new
}
