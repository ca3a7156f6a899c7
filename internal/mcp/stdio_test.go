package mcp

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/wire"
)

// TestStdioAnswersBeforeEOF: a client that writes its requests and closes its end
// (printf ... | agentbox mcp) gets an answer to each.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := NewServer(Options{Service: wire.New(stubService{})}).Run(ctx, drainingTransport(ctx, strings.NewReader(in), &out, time.Minute))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, want := range []string{`"id":1,"result":{"capabilities"`, `"id":2,"result":{`, `"name":"exec"`, `"id":3,"error":{`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in the output:\n%.2000s", want, out.String())
		}
	}
}

// TestStdioGrace: a call that is never answered holds the end of input for the
// grace period only.
func TestStdioGrace(t *testing.T) {
	p := &pending{changed: make(chan struct{}, 1)}
	p.add(calls([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`)), 0)
	p.add(calls([]byte(`[{"jsonrpc":"2.0","id":7,"method":"x"},{"jsonrpc":"2.0","method":"notifications/y"}]`)), 0)
	p.add(0, responses([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`+"\n")))
	if p.calls != 2 || p.answered != 1 {
		t.Fatalf("calls %d answered %d, want 2 and 1", p.calls, p.answered)
	}
	start := time.Now()
	p.wait(context.Background(), 50*time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("wait returned after %v with a call unanswered", d)
	}
	p.add(0, responses([]byte(`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"m"}}`)))
	p.wait(context.Background(), time.Hour) // all answered: returns at once
}
