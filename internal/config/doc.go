// Package config reads the configuration of `agentbox serve`: where it listens, which
// bearer tokens exist and what tenant and scopes each grants, per-tenant quotas and
// workspace roots, request limits and what happens to environments at shutdown. It
// also knows the default socket and token file locations, and refuses a socket
// directory that another user could write in.
//
// It is, with cmd/agentbox, the only code that reads files or environment variables.
// It does not authenticate requests or enforce anything: package api does, with the
// Config this package returns. Tokens are kept only as SHA-256 digests once loaded.
package config
