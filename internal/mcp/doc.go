// Package mcp serves agentbox environments as Model Context Protocol tools, built on
// the official Go SDK: the same operations as the HTTP API (create, list, destroy,
// exec, background processes and their output, files, patches, str_replace, diff,
// artifacts), each with input and output schemas and honest annotations, in the
// API's own wire types. It serves them over stdio (`agentbox mcp`, through the
// daemon's client: Remote) and over streamable HTTP, mounted at /mcp of
// `agentbox serve` (Mount) behind the same bearer tokens, where it also checks
// the Origin the MCP transport requires.
//
// It does not authenticate or authorise anything itself: it calls a Service that
// does (the server's wire.Service over the access.Guard, or the daemon through
// Remote), and it maps errors to the API's envelope with wire.Map, returned as tool
// errors (isError: true) whose text is the envelope's JSON.
package mcp
