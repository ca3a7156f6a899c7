// Package access decides who may do what at the service edge. Auth maps a bearer
// token to a Caller (tenant, task, scopes) in constant time and applies the
// tenant's request rate; Guard wraps an env.Service and, before each call, checks
// the caller's scope, its tenant's quotas and workspace roots, and the server's
// limits, and replaces the Owner argument by the caller's, so that no request acts
// for another tenant. The HTTP API and the MCP tools both call a Guard; the
// coordinator's API (package sessionapi) uses Auth alone, over its own tokens
// (NewTokenAuth), and Restorable tells a restarting environment manager which
// recorded environments the tenants' configuration still allows.
//
// It does not speak HTTP beyond reading the Authorization header, turn its errors
// into statuses or envelopes (package wire does), or read any file: the tokens,
// tenants and limits arrive as a *config.Config.
package access
