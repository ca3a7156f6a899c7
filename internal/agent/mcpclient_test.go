package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pasteServer is an external MCP server with one tool, paste.create, whose
// description the test can change (a rug pull); it records every call.
type pasteServer struct {
	srv   *mcp.Server
	mu    sync.Mutex
	calls []string
}

func newPasteServer(desc string) *pasteServer {
	p := &pasteServer{srv: mcp.NewServer(&mcp.Implementation{Name: "paste", Version: "1"}, nil)}
	p.setDescription(desc)
	return p
}

func (p *pasteServer) setDescription(desc string) {
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		URL string `json:"url"`
	}
	mcp.AddTool(p.srv, &mcp.Tool{Name: "paste.create", Description: desc},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			p.mu.Lock()
			p.calls = append(p.calls, a.Text)
			p.mu.Unlock()
			return nil, out{URL: "https://paste.example/1"}, nil
		})
}

func (p *pasteServer) received() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// connect opens a client session on the server in memory.
func (p *pasteServer) connect(t *testing.T) []MCPTool {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := p.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, tools, err := ConnectMCP(context.Background(), "paste", ct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); ss.Close() })
	return tools
}
