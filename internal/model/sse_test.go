package model

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"data only", "data: a\n\ndata: b\n\n", []sseEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"event and data", "event: ping\ndata: {}\n\n", []sseEvent{{Event: "ping", Data: []byte("{}")}}},
		{"CRLF", "event: x\r\ndata: 1\r\n\r\n", []sseEvent{{Event: "x", Data: []byte("1")}}},
		{"multi-line data", "data: a\ndata: b\n\n", []sseEvent{{Data: []byte("a\nb")}}},
		{"no space after colon", "data:a\n\n", []sseEvent{{Data: []byte("a")}}},
		{"comments, id and retry skipped", ": keep-alive\nid: 7\nretry: 100\ndata: a\n\n", []sseEvent{{Data: []byte("a")}}},
		{"blank lines between events", "\n\n\ndata: a\n\n\n", []sseEvent{{Data: []byte("a")}}},
		{"event cut by EOF is dropped", "data: a\n\ndata: {\"par", []sseEvent{{Data: []byte("a")}}},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(tc.in))
			var got []sseEvent
			for {
				ev, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The stream decoders must never panic on what a server sends; they may only fail.
func FuzzStreams(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]}}]}\n\ndata: [DONE]\n\n",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\"}}\n\n",
		"data: {\"error\":{\"message\":\"x\"}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr := &transport{provider: "p", clock: systemClock{}, maxBody: 1 << 20, idle: defaultStreamIdle}
		ctx := t.Context()
		x := tr.begin(ctx, "m", true)
		readOpenAIStream(ctx, ctx, x, strings.NewReader(in), newToolNames(nil, nil))
		x = tr.begin(ctx, "m", true)
		readAnthropicStream(ctx, ctx, x, strings.NewReader(in), newToolNames(nil, nil))
	})
}
