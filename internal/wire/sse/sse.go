// Package sse writes server-sent event streams: the framing, the flushing and the
// heartbeat that the environment daemon's process and network streams and the
// coordinator's session streams share, and the watermark a client resumes after.
package sse

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Heartbeat is how often an idle stream sends a comment, so that proxies and
// clients can tell a quiet stream from a dead connection.
const Heartbeat = 15 * time.Second

// Stream is one event stream on an HTTP response. Its methods may be called from
// several goroutines (events and heartbeats): each write holds the stream's lock.
type Stream struct {
	mu sync.Mutex
	bw *bufio.Writer
	rc *http.ResponseController
}

// Open sends the stream's headers and its reconnection hint (one second). The
// caller has already refused the request if it could not be served: after Open
// the status is 200 and errors travel as events.
func Open(w http.ResponseWriter) *Stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &Stream{bw: bufio.NewWriterSize(w, 32<<10), rc: http.NewResponseController(w)}
	fmt.Fprint(s.bw, "retry: 1000\n\n")
	return s
}

// Event buffers one event (id may be empty); Flush sends what is buffered, so a
// burst can share one write. JSON holds no raw newline, so data is one line.
func (s *Stream) Event(kind, id string, v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "" {
		fmt.Fprintf(s.bw, "id: %s\n", id)
	}
	fmt.Fprintf(s.bw, "event: %s\ndata: %s\n\n", kind, b)
}

// Flush sends the buffered events; an error means the client is gone.
func (s *Stream) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush()
}

func (s *Stream) flush() error {
	if err := s.bw.Flush(); err != nil {
		return err
	}
	return s.rc.Flush()
}

// KeepAlive sends a heartbeat comment every Heartbeat until ctx ends; when one
// cannot be written (the client went), it calls stop and returns. Run it in a
// goroutine of its own.
func (s *Stream) KeepAlive(ctx context.Context, stop func()) {
	t := time.NewTicker(Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			fmt.Fprint(s.bw, ": ping\n\n")
			err := s.flush()
			s.mu.Unlock()
			if err != nil {
				stop()
				return
			}
		}
	}
}

// After is the sequence number a client resumes after: ?after= or the
// Last-Event-ID header (what EventSource sends on reconnecting), the later of the
// two; 0 without either. The error names the field that is not a non-negative
// integer.
func After(r *http.Request) (int64, error) {
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("after=%q: want an event sequence number (a non-negative integer)", v)
		}
		after = n
	}
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("the Last-Event-ID header %q: want an event sequence number (a non-negative integer)", v)
		}
		after = max(after, n)
	}
	return after, nil
}
