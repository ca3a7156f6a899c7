package mcp

import (
	"crypto/rand"

	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/wire"
)

// Embedded is the configuration of `agentbox mcp` without a daemon: the tools call
// svc (an in-process env.Manager) through the same access.Guard and wire.Service
// as the daemon's, as the one tenant of a personal daemon, "local" (config.Local:
// workspaces under workspaceRoots, no mounts, any network). There is no token:
// every call runs as that tenant with every scope. Error messages hide the roots
// and the host directories in redact.
func Embedded(svc env.Service, workspaceRoots []string, redact ...string) Options {
	cfg := config.Local(rand.Text(), workspaceRoots...) // the token is never presented
	return Options{
		Service:  wire.New(access.NewGuard(svc, cfg, nil)),
		Redactor: wire.NewRedactor(append(redact, workspaceRoots...)...),
		Caller:   access.Caller{Tenant: "local", Scopes: config.AllScopes, Token: "embedded"},
	}
}
