package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Stream reads a background command's events from a server-sent-events response.
// When the connection breaks before the exit event it reconnects with
// Last-Event-ID set to the last event received, so no event is lost or repeated.
// It is not safe for concurrent use.
type Stream struct {
	c       *Client
	ctx     context.Context
	path    string
	last    int64
	resp    *http.Response
	br      *bufio.Reader
	done    bool
	err     error
	fails   int
	Reconns int // reconnections made so far, for callers that report them
}

// Events streams the events of a background command that come after sequence
// number after (0: from the first). Nothing is sent until the first Next.
func (c *Client) Events(ctx context.Context, id, procID string, after int64) *Stream {
	return &Stream{c: c, ctx: ctx, path: procPath(id, procID) + "/events", last: after}
}

// Open connects now rather than at the first Next, so that an error the server
// answers with (an unknown process, a missing scope) is known before any event.
func (s *Stream) Open() error {
	if s.resp != nil || s.done || s.err != nil {
		return s.err
	}
	for {
		err := s.connect()
		if err == nil {
			return nil
		}
		if !s.retry(err) {
			s.err = err
			return err
		}
	}
}

// LastSeq is the sequence number of the last event returned.
func (s *Stream) LastSeq() int64 { return s.last }

// Close ends the stream. Call it unless Next returned io.EOF or an error: an open
// stream holds a connection.
func (s *Stream) Close() error {
	s.done = true
	if s.resp != nil {
		s.resp.Body.Close()
		s.resp = nil
	}
	return nil
}

// Next returns the next event. After the exit event it returns io.EOF.
func (s *Stream) Next() (Event, error) {
	for {
		if s.err != nil {
			return Event{}, s.err
		}
		if s.done {
			return Event{}, io.EOF
		}
		if s.resp == nil {
			if err := s.connect(); err != nil {
				if !s.retry(err) {
					s.err = err
					return Event{}, err
				}
				continue
			}
		}
		ev, err := s.read()
		var se *streamError
		if errors.As(err, &se) {
			// The server ended the stream with an error envelope: final.
			s.Close()
			s.err = se.e
			return Event{}, s.err
		}
		if err != nil {
			// A broken or ended connection before the exit event: resume.
			s.resp.Body.Close()
			s.resp = nil
			if s.ctx.Err() != nil {
				s.err = s.ctx.Err()
				return Event{}, s.err
			}
			if !s.retry(err) {
				s.err = err
				return Event{}, err
			}
			continue
		}
		if ev.Seq <= s.last {
			continue // already delivered; a server must not resend it, but be sure
		}
		s.last, s.fails = ev.Seq, 0
		if ev.Kind == EventExit {
			s.Close()
		}
		return ev, nil
	}
}

// retry waits before the next connection attempt and reports whether one is
// allowed: errors the server chose (other than unavailable) are final.
func (s *Stream) retry(err error) bool {
	var e *Error
	if errors.As(err, &e) && !e.Retryable {
		return false
	}
	s.fails++
	if s.fails > s.c.opts.Reconnects {
		return false
	}
	d := s.c.opts.ReconnectDelay << (s.fails - 1)
	if d > 2*time.Second || d <= 0 {
		d = 2 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
	}
	s.Reconns++
	return true
}

func (s *Stream) connect() error {
	req, err := s.c.request(s.ctx, http.MethodGet, s.path+"?after="+strconv.FormatInt(s.last, 10), nil, "")
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(s.last, 10))
	resp, err := s.c.send(req)
	if err != nil {
		return err
	}
	s.resp, s.br = resp, bufio.NewReader(resp.Body)
	return nil
}

// read parses SSE frames until one carries data.
func (s *Stream) read() (Event, error) {
	var data []byte
	kind := ""
	for {
		line, err := s.br.ReadBytes('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if data == nil {
				continue
			}
			if kind == "error" {
				var env Envelope
				if err := json.Unmarshal(data, &env); err != nil || env.Error == nil {
					return Event{}, fmt.Errorf("client: bad error event: %q", data)
				}
				return Event{}, &streamError{env.Error}
			}
			var ev Event
			if err := json.Unmarshal(data, &ev); err != nil {
				return Event{}, fmt.Errorf("client: bad event: %w", err)
			}
			return ev, nil
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		case "event":
			kind = string(value)
		}
	}
}

// streamError is an error event the server sent (event: error).
type streamError struct{ e *Error }

func (e *streamError) Error() string { return e.e.Error() }
