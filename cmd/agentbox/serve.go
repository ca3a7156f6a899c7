package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/mcp"
)

type serveOptions struct {
	config   string
	stateDir string
	listen   string
	socket   string
	onExit   string
}

func serveCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen HOST:PORT] [--socket PATH]",
		Short: "Serve environments over HTTP (Unix socket or TCP) and MCP at /mcp",
		Long: `Serve runs the agentbox daemon: environments behind an HTTP/JSON API (docs/API.md)
and the same operations as MCP tools at /mcp. It listens on a Unix socket by default
(/run/agentbox/agentbox.sock as root, else $XDG_RUNTIME_DIR/agentbox.sock, else
$TMPDIR/agentbox-UID/agentbox.sock; its directory must be the user's own), or on TCP
with --listen.

The configuration file is --config, else $AGENTBOX_CONFIG (agentbox config init
writes a commented example). Without one it serves one tenant, "local", whose token
(every scope) it writes to agentbox.token next to the socket, where the CLI finds
it. That tenant may create environments from directories under your home directory
and under the directory serve started in (its workspace_roots; "/" never counts),
and may mount none (mount_roots): a workspace is a copy-on-write lower layer that
no environment can change, a mount may write to the host.

On SIGTERM or SIGINT it stops accepting connections, lets in-flight requests finish
within shutdown.grace, and ends every environment's processes. With --on-exit keep
(the default) it keeps their files, as a crash (SIGKILL) does: the next serve on the
same state directory restores them, their running commands reported lost (pool
members and environments forked from a snapshot are destroyed). With --on-exit
destroy nothing of them is left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serveMain(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "configuration file (YAML): tokens, tenants, workspace roots, quotas, limits (default: $AGENTBOX_CONFIG)")
	f.StringVar(&o.listen, "listen", "", "TCP address to listen on instead of the Unix socket, e.g. 127.0.0.1:7070")
	f.StringVar(&o.stateDir, "state-dir", "", "state directory (default: the configuration's state_dir, else /var/lib/agentbox as root, else $XDG_STATE_HOME/agentbox)")
	f.StringVar(&o.socket, "socket", "", "Unix socket path (default: $AGENTBOX_SOCKET, else the per-user default)")
	f.StringVar(&o.onExit, "on-exit", "keep", "what SIGTERM or SIGINT does to environments: keep (their files, for the next serve) or destroy")
	return cmd
}

func serveMain(ctx context.Context, o serveOptions) error {
	if o.onExit != "keep" && o.onExit != "destroy" {
		return fmt.Errorf("--on-exit %q: give keep or destroy", o.onExit)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	var cfg *config.Config
	if o.config == "" {
		o.config = os.Getenv("AGENTBOX_CONFIG")
	}
	if o.config != "" {
		var err error
		if cfg, err = config.Load(o.config); err != nil {
			return err
		}
		if o.socket != "" {
			cfg.Socket = o.socket
		}
	} else {
		socket := o.socket
		if socket == "" {
			socket = config.DefaultSocket()
		}
		tokFile := config.LocalTokenFile(socket)
		tok, err := config.NewLocalToken(tokFile)
		if err != nil {
			return err
		}
		roots := config.LocalWorkspaceRoots()
		cfg = config.Local(tok, roots...)
		cfg.Socket = socket
		log.Info("no --config: one tenant, \"local\"", "token_file", tokFile, "workspace_roots", roots)
	}
	if o.listen != "" {
		cfg.Listen = o.listen
	}
	if o.stateDir != "" {
		cfg.StateDir = o.stateDir
	}
	// NewManager restores the environments a previous daemon on this state
	// directory left (their files; their processes died with it).
	ecfg := api.EnvConfig(cfg)
	ecfg.Log = log
	ecfg.KeepOnClose = o.onExit == "keep"
	// The build sandbox that runs the API's builds' apt, npm, go_modules and
	// run steps (a Debian base's include list and copy steps need none).
	runner, err := buildRunner(cfg.Builds.AllowPrivate, cfg.Builds.CAFiles, "builds.ca_files")
	if err != nil {
		return err
	}
	images, err := openImages(cfg.StateDir)
	if err != nil {
		return err
	}
	if images != nil {
		ecfg.Images = images
	}
	mgr, err := newManager(ctx, log, ecfg)
	if err != nil {
		return fmt.Errorf("environments: %w", err)
	}
	defer mgr.Close() // leaves or destroys the environments: --on-exit
	ln, err := api.Listen(cfg)
	if err != nil {
		return err
	}
	addr := cfg.Listen
	if addr == "" {
		addr = cfg.Socket
	}
	log.Info("serving", "addr", addr, "state_dir", cfg.StateDir)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	aopts := api.Options{Config: cfg, Service: mgr, Logger: log, Runner: runner}
	if images != nil {
		aopts.Templates = images
	}
	srv, err := api.New(aopts)
	if err != nil {
		ln.Close()
		return err
	}
	mcp.Mount(srv, mcp.Options{Service: srv.Service(), Templates: srv.Templates(), Redactor: srv.Redactor(), Logger: log,
		Denied: srv.Metrics().Denied}, cfg.MCP.AllowedOrigins)
	return srv.Run(ctx, ln)
}

// newManager opens the state directory. A daemon killed a moment ago may still have
// children between fork and exec holding its lock, so "busy" is retried for a few
// seconds (the time a supervisor's restart takes to hit it) before it is final.
func newManager(ctx context.Context, log *slog.Logger, cfg env.Config) (*env.Manager, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := env.NewManager(cfg)
		if err == nil || !errors.Is(err, env.ErrBusy) || time.Now().After(deadline) {
			return m, err
		}
		log.Warn("state directory busy; retrying", "state_dir", cfg.StateDir)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
