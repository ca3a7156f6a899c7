// Package api is the HTTP edge of agentbox (`agentbox serve`): it authenticates
// every request with package access (bearer token → tenant and scopes, the
// tenant's rate) and calls its Guard (scopes, per-tenant quotas), bounds request
// sizes, maps every env.Service method to a route under /v1, streams a
// command's events as server-sent events that a client resumes by event id, turns
// errors into the JSON envelope with the right status, serves /healthz and
// Prometheus /metrics, mounts the MCP handler at /mcp, and shuts down gracefully.
//
// It does not run commands or touch workspaces: everything goes through an
// env.Service, whose sentinel errors are mapped to codes here and nowhere below.
// Its access.Guard is what the MCP server calls too. It
// reads no files or environment variables: the configuration arrives as a
// *config.Config.
package api
