package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/pin"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/tool"
)

// permissionOptions are the flags of the permission layer, shared by agent and
// eval.
type permissionOptions struct {
	policyFile    string
	approvalsFile string
	grants        []string
	allowNet      []string
	mcp           []string
	pinsFile      string
}

func (p *permissionOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&p.policyFile, "permissions", "", "permission policy file (YAML or JSON; default the built-in policy: agentbox policy default)")
	f.StringVar(&p.approvalsFile, "approvals", "", "approvals file answering approval requests for a run without a person (what it leaves unanswered does: see --help)")
	f.StringArrayVar(&p.grants, "grant", nil, "capability granted for the session from its start (repeatable): write:src/**, exec:go test **, sensitive:read:.env, network:HOST")
	f.StringArrayVar(&p.mcp, "mcp", nil, "mount the tools of an external MCP server, started on the host as COMMAND with stdio (repeatable NAME=COMMAND); only tools pinned in --pins are mounted")
	f.StringVar(&p.pinsFile, "pins", "", "the pins of MCP tools (agentbox policy pin writes it)")
	f.StringArrayVar(&p.allowNet, "allow-net", nil, "host the http.fetch tool may reach through the session's egress proxy (repeatable: NAME, *.SUFFIX, NAME:PORT, preset:NAME); none: no http.fetch")
}

// config reads the files the flags name into a PermissionConfig, and the egress
// configuration of http.fetch (nil without --allow-net).
func (p *permissionOptions) config() (agent.PermissionConfig, *egress.Config, error) {
	c := agent.PermissionConfig{Grants: p.grants, Allow: p.allowNet}
	if p.policyFile != "" {
		b, err := os.ReadFile(p.policyFile)
		if err != nil {
			return c, nil, fmt.Errorf("--permissions: %w", err)
		}
		if c.Policy, err = policy.Parse(b); err != nil {
			return c, nil, fmt.Errorf("--permissions %s: %w", p.policyFile, err)
		}
	}
	if p.approvalsFile != "" {
		b, err := os.ReadFile(p.approvalsFile)
		if err != nil {
			return c, nil, fmt.Errorf("--approvals: %w", err)
		}
		if c.Approvals, err = grant.ParseApprovals(b); err != nil {
			return c, nil, fmt.Errorf("--approvals %s: %w", p.approvalsFile, err)
		}
	}
	if _, err := agent.NewPermissions(c); err != nil {
		return c, nil, err
	}
	if len(p.allowNet) == 0 {
		return c, nil, nil
	}
	eg := &egress.Config{Policy: egress.Policy{Allow: p.allowNet}}
	if err := eg.Policy.Validate(); err != nil {
		return c, nil, fmt.Errorf("--allow-net: %w", err)
	}
	return c, eg, nil
}

// mcpServer is one --mcp NAME=COMMAND.
type mcpServer struct{ name, command string }

func parseMCP(specs []string) ([]mcpServer, error) {
	var out []mcpServer
	for _, s := range specs {
		name, command, ok := strings.Cut(s, "=")
		if !ok || name == "" || strings.TrimSpace(command) == "" {
			return nil, fmt.Errorf("--mcp %q: want NAME=COMMAND (the command starts an MCP server on stdio)", s)
		}
		out = append(out, mcpServer{name, command})
	}
	return out, nil
}

// connect starts the server's command on the host and lists its tools.
func (m mcpServer) connect(ctx context.Context) (*agent.MCPServer, []agent.MCPTool, error) {
	argv := strings.Fields(m.command)
	return agent.ConnectMCP(ctx, m.name, &mcp.CommandTransport{Command: exec.CommandContext(ctx, argv[0], argv[1:]...)})
}

// loadPins reads a pins file; a missing one is an empty store.
func loadPins(path string) (*pin.Store, error) {
	s := pin.NewStore(nil)
	if path == "" {
		return s, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--pins: %w", err)
	}
	defer f.Close()
	if err := s.Load(f); err != nil {
		return nil, fmt.Errorf("--pins %s: %w", path, err)
	}
	return s, nil
}

// mountMCP connects to each --mcp server and mounts its pinned tools into r; the
// others are reported, with the way to grant them. It returns a function that
// closes the connections.
func (p *permissionOptions) mountMCP(ctx context.Context, r *tool.Registry) (func(), error) {
	servers, err := parseMCP(p.mcp)
	if err != nil || len(servers) == 0 {
		return func() {}, err
	}
	pins, err := loadPins(p.pinsFile)
	if err != nil {
		return func() {}, err
	}
	var conns []*agent.MCPServer
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	var all []agent.MCPTool
	for _, m := range servers {
		c, tools, err := m.connect(ctx)
		if err != nil {
			closeAll()
			return func() {}, err
		}
		conns = append(conns, c)
		all = append(all, tools...)
	}
	refused, err := agent.Mount(r, pins, tool.ScopeMCP, all)
	if err != nil {
		closeAll()
		return func() {}, err
	}
	for _, c := range refused {
		fmt.Fprintf(stderr, "agentbox: MCP tool %s/%s not mounted (%s): %s\n", c.Tool.Server, c.Tool.Name, c.Status, c.Why)
		if c.Diff != "" {
			fmt.Fprint(stderr, c.Diff)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintln(stderr, "agentbox: review and pin them with: agentbox policy pin --pins FILE NAME=COMMAND")
	}
	return closeAll, nil
}
