package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/internal/tool"
)

// MCPServer is a connection to an external MCP server whose tools a session
// mounts (Mount), named by the operator.
type MCPServer struct {
	Name string
	cs   *mcp.ClientSession
}

// ConnectMCP connects to a server over t (an mcp.CommandTransport for `agent
// --mcp NAME=COMMAND`) and lists its tools, each with a handler that forwards a
// call to it. What the server says of its tools is judged by Mount and the
// policy, never trusted.
func ConnectMCP(ctx context.Context, name string, t mcp.Transport) (*MCPServer, []MCPTool, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "agentbox", Version: "1"}, nil)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp server %s: %w", name, err)
	}
	s := &MCPServer{Name: name, cs: cs}
	var out []MCPTool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("mcp server %s: list tools: %w", name, err)
		}
		// tools/list's shape is tool.Def's: one decoding, no field copied by hand.
		b, err := json.Marshal(t)
		var d tool.Def
		if err == nil {
			err = json.Unmarshal(b, &d)
		}
		if err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("mcp server %s: tool %q: %w", name, t.Name, err)
		}
		out = append(out, MCPTool{Server: name, Def: d, Call: s.handler(d.Name)})
	}
	return s, out, nil
}

// Close ends the session with the server.
func (s *MCPServer) Close() error { return s.cs.Close() }

func (s *MCPServer) handler(name string) tool.Handler {
	return func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		r, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return tool.Result{}, tool.Errorf(tool.ETRANSIENT, true, tool.ActRetry, "mcp server %s: %s: %v", s.Name, name, err)
		}
		var text []string
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		if r.IsError {
			return tool.Result{}, tool.Errorf(tool.EPRECONDITION, false, tool.ActStop, "mcp server %s: %s: %s", s.Name, name, strings.Join(text, "\n"))
		}
		data := r.StructuredContent
		if data == nil {
			data = map[string]any{}
		}
		c := tool.Clip(strings.Join(text, "\n"), tool.DefaultMaxOutput)
		return tool.Result{Data: data, Text: c.Text, Truncated: c.Truncated, Source: "mcp:" + s.Name + "/" + name}, nil
	}
}
