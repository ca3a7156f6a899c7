// Package mcp serves agentbox environments as Model Context Protocol tools, built on
// the official Go SDK: the same operations as the HTTP API (create, list, destroy,
// exec, background processes and their output, files, patches, str_replace, diff,
// artifacts), each with input and output schemas and honest annotations. It serves
// them over stdio (`agentbox mcp`, which talks to the daemon through package client)
// and over streamable HTTP at /mcp of `agentbox serve` (behind the same bearer
// tokens).
//
// It does not authenticate or authorise anything itself: it calls an env.Service
// that does (api.Guard in the daemon, api.Remote for stdio), and it maps errors to
// the API's envelope with api.Map, returned as tool errors (isError: true) whose text
// is the envelope's JSON.
package mcp
