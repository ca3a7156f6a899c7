// Package api is the HTTP server of agentbox (`agentbox serve`): it serves every
// environment operation as a route under /v1, behind bearer tokens, request-size
// and body-time limits, streams a command's events as server-sent events that a
// client resumes by event id, answers every failure with the envelope and its
// status (package wire), serves /healthz and Prometheus /metrics, and shuts down
// gracefully. Handle mounts another protocol's handler (the CLI mounts MCP at
// /mcp) behind the same tokens, log and metrics.
//
// It decides no one's rights (package access: the token's caller, the Guard's
// scopes and quotas, which every route calls through wire.Service) and does not
// run commands or touch workspaces: everything goes through an env.Service. It
// reads no files or environment variables: the configuration arrives as a
// *config.Config.
package api
