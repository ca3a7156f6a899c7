package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/mcp"
)

type mcpOptions struct {
	daemon   daemonFlags
	embedded bool
}

func mcpCmd() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [--server ADDR | --embedded]",
		Short: "Serve agentbox environments as MCP tools over stdio",
		Long: `Mcp speaks the Model Context Protocol on standard input and output, for Claude Code,
Codex or any MCP client ({"command": "agentbox", "args": ["mcp"]}), and serves every
environment operation as a tool.

It chooses where environments live, and says which on standard error:
  - the daemon, when --server (or $AGENTBOX_SERVER) names one, or one answers on the
    local socket: the daemon's token, tenant and scopes apply;
  - otherwise (or with --embedded) this process: an in-process environment manager,
    the daemon's own, for one tenant with every scope that may start environments
    from your home directory and the directory mcp started in (as serve without
    --config). Its environments end when the client disconnects.
Logs go to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return mcpMain(cmd.Context(), o) },
	}
	o.daemon.add(cmd.Flags())
	cmd.Flags().BoolVar(&o.embedded, "embedded", false, "run environments in this process even if a daemon answers")
	cmd.MarkFlagsMutuallyExclusive("server", "embedded")
	return cmd
}

func mcpMain(ctx context.Context, o mcpOptions) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	explicit := o.daemon.server != "" || os.Getenv("AGENTBOX_SERVER") != ""
	if !o.embedded {
		c, err := o.daemon.client()
		if err == nil {
			err = c.Health(ctx)
		}
		switch {
		case err == nil:
			fmt.Fprintf(stderr, "agentbox mcp: environments live in the daemon at %s\n", o.daemon.addr())
			return mcp.ServeStdio(ctx, mcp.Options{Service: mcp.Remote(c), Logger: log})
		case explicit || !errors.Is(err, client.ErrNoDaemon):
			return err // a daemon was asked for, or one is there and refused us
		}
		fmt.Fprintf(stderr, "agentbox mcp: no daemon (%v); environments live in this process (embedded) and end with it\n", err)
	} else {
		fmt.Fprintln(stderr, "agentbox mcp: environments live in this process (embedded) and end with it")
	}
	mgr, closeEnvs, err := newLocalEnv(config.DefaultStateDir(), "")
	if err != nil {
		return fmt.Errorf("embedded environments: %w", err)
	}
	defer closeEnvs()
	d := mcp.Embedded(mgr, config.LocalWorkspaceRoots(), filepath.Join(os.TempDir(), "agentbox-agent-"))
	d.Logger = log
	return mcp.ServeStdio(ctx, d)
}
