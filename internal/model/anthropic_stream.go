package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The streamed side of the Anthropic Messages API: message_start (id, model, input
// usage), content_block_start/delta/stop per block (text_delta, input_json_delta),
// message_delta (stop_reason, cumulative usage), message_stop; ping and unknown
// events are skipped, an error event ends the stream.

type anEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string   `json:"id"`
		Model string   `json:"model"`
		Usage *anUsage `json:"usage"`
	} `json:"message"`
	Index        int          `json:"index"`
	ContentBlock *anRespBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		InputTokens              *int `json:"input_tokens"`
		OutputTokens             *int `json:"output_tokens"`
		CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anBlockState struct {
	typ   string
	id    string
	name  string
	text  strings.Builder
	input strings.Builder
	// started holds the input given in content_block_start, used when no delta
	// follows (a tool without parameters).
	started json.RawMessage
}

func readAnthropicStream(parent, sctx context.Context, x *exchange, body io.Reader, names toolNames) (Response, error) {
	rd := newSSEReader(x.capped(body))
	var (
		blocks  []*anBlockState
		byIndex = map[int]*anBlockState{}
		usage   anUsage
		stop    string
	)
	fail := func(err error) (Response, error) { return Response{Meta: x.report(err)}, err }
	for done := false; !done; {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return fail(x.streamError(parent, sctx, fmt.Errorf("stream ended before message_stop: %w", io.ErrUnexpectedEOF)))
		}
		if err != nil {
			return fail(x.streamError(parent, sctx, err))
		}
		var e anEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return fail(x.badResponse(fmt.Errorf("%s event: %w", ev.Event, err)))
		}
		switch e.Type {
		case "message_start":
			if e.Message == nil {
				return fail(x.badResponse(errors.New("message_start without message")))
			}
			x.setIDs(e.Message.ID, e.Message.Model)
			if e.Message.Usage != nil {
				usage = *e.Message.Usage
				x.setUsage(usage.usage())
			}
		case "content_block_start":
			if e.ContentBlock == nil {
				return fail(x.badResponse(errors.New("content_block_start without content_block")))
			}
			b := &anBlockState{typ: e.ContentBlock.Type, id: e.ContentBlock.ID, name: e.ContentBlock.Name, started: e.ContentBlock.Input}
			b.text.WriteString(e.ContentBlock.Text)
			blocks = append(blocks, b)
			byIndex[e.Index] = b
			if b.typ == "tool_use" {
				x.firstToken()
			}
		case "content_block_delta":
			b := byIndex[e.Index]
			if b == nil || e.Delta == nil {
				return fail(x.badResponse(fmt.Errorf("delta for unknown block %d", e.Index)))
			}
			switch e.Delta.Type {
			case "text_delta":
				x.firstToken()
				b.text.WriteString(e.Delta.Text)
			case "input_json_delta":
				b.input.WriteString(e.Delta.PartialJSON)
			}
		case "message_delta":
			if e.Delta != nil && e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
			}
			if u := e.Usage; u != nil { // counts here are cumulative
				set := func(dst *int, src *int) {
					if src != nil {
						*dst = *src
					}
				}
				set(&usage.InputTokens, u.InputTokens)
				set(&usage.OutputTokens, u.OutputTokens)
				set(&usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
				set(&usage.CacheReadInputTokens, u.CacheReadInputTokens)
				x.setUsage(usage.usage())
			}
		case "message_stop":
			done = true
		case "error":
			typ, msg := "", ""
			if e.Error != nil {
				typ, msg = e.Error.Type, e.Error.Message
			}
			pe := parseAnthropicError(0, ev.Data)
			kind := anStreamErrorKind(typ, pe.overflow)
			if kind == ErrAuth {
				msg = ""
			}
			return fail(&APIError{Provider: x.tr.provider, Type: typ, Message: cutMessage(x.tr.key.scrub(msg)),
				RequestID: x.meta.RequestID, kind: kind})
		}
	}
	meta := x.report(nil)

	out := Response{Meta: meta, RawStopReason: stop, StopReason: anStop(stop)}
	var text strings.Builder
	for _, b := range blocks {
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			raw := []byte(b.input.String())
			if b.input.Len() == 0 {
				raw = b.started
			}
			out.ToolCalls = append(out.ToolCalls, newCall(b.id, len(out.ToolCalls), names.local(b.name), raw))
		}
	}
	out.Text = text.String()
	x.scrubResponse(&out)
	return out, nil
}
