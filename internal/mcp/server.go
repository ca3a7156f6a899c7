package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/version"
	"github.com/agentbox/agentbox/internal/wire"
)

// Options configure the tools. Service is required.
type Options struct {
	Service Service
	// Templates, if set, serves template_list and template_inspect.
	Templates Templates
	// Redactor removes host paths from error messages (nil: none to remove).
	Redactor *wire.Redactor
	// Logger receives internal errors. Default: none.
	Logger *slog.Logger
	// Denied, if set, counts each tool error that is a policy decision, by
	// tenant and code (the server's metrics).
	Denied func(tenant, code string)
	// Caller, if its Tenant is set, is who every tool call runs as when the
	// request carries no token (stdio in embedded mode: the user). Over HTTP the
	// caller comes from each request's token.
	Caller access.Caller
}

// NewServer returns an MCP server with every agentbox tool.
func NewServer(d Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentbox", Title: "agentbox environments", Version: version.Get().Short()},
		&mcp.ServerOptions{
			Instructions: "agentbox environments are sandboxes with a private copy-on-write workspace. " +
				"Create one with env_create, run commands with exec (argv without a shell, or command for a shell command line), " +
				"read and edit files, apply patches, review diff, and destroy it with env_destroy when done. " +
				"Errors are JSON envelopes {\"error\":{\"code\",\"message\",\"retryable\",\"suggested_action\"}}.",
			Logger: d.Logger,
		})
	t := &tools{d: d}
	t.addEnv(s)
	t.addNetwork(s)
	t.addExec(s)
	t.addFiles(s)
	t.addEdit(s)
	t.addTemplates(s)
	return s
}

type tools struct{ d Options }

// toolError is an error whose text is the API's envelope; the SDK returns it as a
// tool result with isError set.
type toolError struct{ env client.Envelope }

func (e *toolError) Error() string {
	b, _ := json.Marshal(e.env)
	return string(b)
}

func (t *tools) fail(ctx context.Context, err error, what string) error {
	status, e := wire.Map(err, what, t.d.Redactor)
	if status == http.StatusInternalServerError && t.d.Logger != nil {
		t.d.Logger.Error("mcp tool failed", "err", err)
	}
	if t.d.Denied != nil {
		c, _ := access.CallerFrom(ctx)
		t.d.Denied(c.Tenant, e.Code)
	}
	e.Status = status
	return &toolError{client.Envelope{Error: &e}}
}

// add registers a typed tool whose handler runs as the caller of the MCP request
// and whose errors become envelopes. what names the object for ENOENT messages.
func add[In, Out any](t *tools, s *mcp.Server, tool *mcp.Tool, what func(In) string, h func(context.Context, In) (Out, error)) {
	mcp.AddTool(s, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		if t.d.Caller.Tenant != "" {
			ctx = access.WithCaller(ctx, t.d.Caller)
		}
		if req != nil && req.Extra != nil {
			if c, ok := callerFromTokenInfo(req.Extra.TokenInfo); ok {
				ctx = access.WithCaller(ctx, c)
			}
		}
		out, err := h(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, t.fail(ctx, err, what(in))
		}
		return nil, out, nil
	})
}

// hints builds honest annotations. Every tool acts on agentbox's own environments
// only: none reaches an open world.
func hints(title string, readOnly, destructive, idempotent bool) *mcp.ToolAnnotations {
	open := false
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, DestructiveHint: &destructive,
		IdempotentHint: idempotent, OpenWorldHint: &open}
}

func envWhat(id string) string { return fmt.Sprintf("environment %q", id) }

func procWhat(id, proc string) string {
	return fmt.Sprintf("process %q of environment %q", proc, id)
}
