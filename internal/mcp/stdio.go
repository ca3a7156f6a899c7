package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves the tools on standard input and output until the client
// closes its end. Requests read before the end of input are answered first.
func ServeStdio(ctx context.Context, d Options) error {
	return NewServer(d).Run(ctx, drainingTransport(ctx, os.Stdin, os.Stdout, 5*time.Second))
}

// drainingTransport is newline-delimited JSON-RPC over in and out that holds
// back the end of in until every call read from it has a response written to
// out, or for grace at most. The SDK's connection cancels the requests in flight
// and writes nothing more once its reader ends, so a client that writes its
// requests and closes its end (printf ... | agentbox mcp) would get no answers.
func drainingTransport(ctx context.Context, in io.Reader, out io.Writer, grace time.Duration) mcp.Transport {
	p := &pending{changed: make(chan struct{}, 1)}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, mcp.DefaultMaxLineLength)
		for sc.Scan() {
			line := sc.Bytes()
			p.add(calls(line), 0)
			if _, err := pw.Write(append(line, '\n')); err != nil {
				return // the server closed its end
			}
		}
		if err := sc.Err(); err != nil {
			pw.CloseWithError(err)
			return
		}
		p.wait(ctx, grace)
		pw.Close()
	}()
	return &mcp.IOTransport{Reader: pr, Writer: countingWriter{out, p}}
}

// pending counts the calls read and the responses written.
type pending struct {
	mu              sync.Mutex
	calls, answered int
	changed         chan struct{}
}

func (p *pending) add(calls, answered int) {
	p.mu.Lock()
	p.calls += calls
	p.answered += answered
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *pending) wait(ctx context.Context, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		p.mu.Lock()
		done := p.answered >= p.calls
		p.mu.Unlock()
		if done {
			return
		}
		select {
		case <-p.changed:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

type countingWriter struct {
	w io.Writer
	p *pending
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if err == nil {
		c.p.add(0, responses(b))
	}
	return n, err
}

func (c countingWriter) Close() error { return nil }

// message is what tells a call (id and method) and a response (id, no method).
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// messages reads one JSON-RPC message or batch; nil if it is neither.
func messages(b []byte) []message {
	b = bytes.TrimSpace(b)
	var ms []message
	if len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &ms) != nil {
			return nil
		}
		return ms
	}
	var m message
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return []message{m}
}

func hasID(m message) bool { return len(m.ID) > 0 && string(m.ID) != "null" }

func calls(line []byte) int {
	n := 0
	for _, m := range messages(line) {
		if hasID(m) && m.Method != "" {
			n++
		}
	}
	return n
}

func responses(b []byte) int {
	n := 0
	for _, m := range messages(b) {
		if hasID(m) && m.Method == "" {
			n++
		}
	}
	return n
}
