package model

import (
	"bufio"
	"bytes"
	"io"
)

// maxSSELine bounds one line of an event stream; some servers send a whole tool
// call's arguments in one data line.
const maxSSELine = 8 << 20

// sseEvent is one server-sent event: its type (from "event:") and its data lines
// joined by newlines.
type sseEvent struct {
	Event string
	Data  []byte
}

// sseReader reads text/event-stream (the WHATWG format both providers use). Comments
// and the id and retry fields are skipped.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	return &sseReader{sc: sc}
}

// Next returns the next event, or io.EOF after the last one. As the standard says,
// an event not ended by a blank line before EOF is discarded: a stream cut in the
// middle of an event shows up as a missing end marker, not as half an event.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data [][]byte
	have := false
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if have {
				ev.Data = bytes.Join(data, []byte("\n"))
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Event = string(value)
			have = true
		case "data":
			data = append(data, bytes.Clone(value))
			have = true
		}
	}
	if err := s.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}
