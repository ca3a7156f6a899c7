package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The streamed side of OpenAI Chat Completions: "data: {chunk}" events ending with
// "data: [DONE]", tool calls arriving as deltas keyed by index whose arguments are
// split across many chunks, and (with stream_options.include_usage) a last chunk
// with empty choices and the usage.

type oaChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage         `json:"usage"`
	Error *json.RawMessage `json:"error"`
}

// oaPartial is a tool call being assembled from deltas.
type oaPartial struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

type oaStreamState struct {
	text    strings.Builder
	refusal strings.Builder
	calls   []*oaPartial
	finish  string
	done    bool
}

// call finds the partial call a delta belongs to: by index when the server sends
// one; without an index, by id, or else the latest call (servers that omit the
// index send one call's deltas together).
func (s *oaStreamState) call(index *int, id string) *oaPartial {
	for _, c := range s.calls {
		if index != nil && c.index == *index {
			return c
		}
		if index == nil && id != "" && c.id == id {
			return c
		}
	}
	if index == nil && id == "" && len(s.calls) > 0 {
		return s.calls[len(s.calls)-1]
	}
	c := &oaPartial{index: len(s.calls), id: id}
	if index != nil {
		c.index = *index
	}
	s.calls = append(s.calls, c)
	return c
}

func readOpenAIStream(parent, sctx context.Context, x *exchange, body io.Reader, names toolNames) (Response, error) {
	var st oaStreamState
	rd := newSSEReader(x.capped(body))
	fail := func(err error) (Response, error) {
		return Response{Meta: x.report(err)}, err
	}
	for !st.done {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			if st.finish != "" { // a server that closes without [DONE]
				break
			}
			return fail(x.streamError(parent, sctx, fmt.Errorf("stream ended before [DONE]: %w", io.ErrUnexpectedEOF)))
		}
		if err != nil {
			return fail(x.streamError(parent, sctx, err))
		}
		data := strings.TrimSpace(string(ev.Data))
		if data == "[DONE]" {
			st.done = true
			break
		}
		if data == "" {
			continue
		}
		var ch oaChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return fail(x.badResponse(fmt.Errorf("stream chunk: %w", err)))
		}
		if ch.Error != nil { // an error reported inside the stream
			pe := parseOpenAIError(0, []byte(`{"error":`+string(*ch.Error)+`}`))
			e := &APIError{Provider: x.tr.provider, Type: pe.Type, Code: pe.Code,
				Message: cutMessage(x.tr.key.scrub(pe.Message)), RequestID: x.meta.RequestID, kind: ErrUnavailable}
			return fail(e)
		}
		x.setIDs(ch.ID, ch.Model)
		if ch.Usage != nil {
			x.setUsage(ch.Usage.usage())
		}
		if err := st.apply(x, &ch); err != nil {
			return fail(x.badResponse(err))
		}
	}
	meta := x.report(nil)

	out := Response{Text: st.text.String(), Meta: meta, RawStopReason: st.finish}
	for i, c := range st.calls {
		out.ToolCalls = append(out.ToolCalls, newCall(c.id, i, names.local(c.name), []byte(c.args.String())))
	}
	out.StopReason = oaStop(st.finish, len(out.ToolCalls) > 0)
	if st.refusal.Len() > 0 {
		out.Text, out.StopReason = st.refusal.String(), StopRefusal
	}
	x.scrubResponse(&out)
	return out, nil
}

func (st *oaStreamState) apply(x *exchange, ch *oaChunk) error {
	if len(ch.Choices) == 0 {
		return nil
	}
	c := ch.Choices[0]
	if text, err := oaContent(c.Delta.Content); err != nil {
		return err
	} else if text != "" {
		x.firstToken()
		st.text.WriteString(text)
	}
	if c.Delta.Refusal != nil {
		st.refusal.WriteString(*c.Delta.Refusal)
	}
	for _, d := range c.Delta.ToolCalls {
		x.firstToken()
		p := st.call(d.Index, d.ID)
		if p.id == "" {
			p.id = d.ID
		}
		if p.name == "" {
			p.name = d.Function.Name
		}
		p.args.Write(oaArgs(d.Function.Arguments))
	}
	if c.FinishReason != nil && *c.FinishReason != "" {
		st.finish = *c.FinishReason
	}
	return nil
}
