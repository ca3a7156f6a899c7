package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/mcp"
)

func mcpCmd() *cobra.Command {
	var d daemonFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve agentbox environments as MCP tools over stdio (through the daemon)",
		Long: `Mcp speaks the Model Context Protocol on standard input and output, for Claude Code,
Codex or any MCP client, and serves every environment operation as a tool. It calls
the agentbox daemon with the given token, so environments live in the daemon and the
token's tenant and scopes apply. Logs go to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			if err := c.Health(cmd.Context()); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			return mcp.ServeStdio(cmd.Context(), mcp.Options{Service: mcp.Remote(c), Logger: log})
		},
	}
	d.add(cmd.Flags())
	return cmd
}
