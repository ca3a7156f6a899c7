// Package tool is the agent's tool contract: what a tool is (Spec), how a call is
// authorised, checked and run (Registry), what every call returns (Envelope), and
// the built-in tools that reach code through the environment API (Service, the
// part of env.Service they call), and the environment a session works in
// (OpenEnv: made from a host directory or a workspace preset, destroyed by Close; with
// EnvOptions.Egress it adds http.fetch and the host-side egress proxy it sends
// through, stopped by Close).
//
// A Spec carries, besides its name, description and input and output JSON Schemas
// (in the shape MCP uses, so an MCP server's tools can be registered the same way),
// six fields a schema cannot express: the effect (read, write, exec, network,
// control), whether a call is idempotent, the authorisation scope it needs, what a
// call does in the permission policy's terms (Describe), a precondition, and its
// declared cost. Registry.Call checks them in a fixed order — scope, then schema,
// then the registry's Gate (the session's permission policy: deny is EPERM, ask is
// EASK with the Verdict in the Outcome), then precondition, then the charge of the
// cost, then the handler — and whatever happens returns an Envelope: {ok, data,
// error{code, message, retryable, suggested_action}, refs, cost, observed_at}. A
// handler that panics yields EINTERNAL; nothing a tool does can crash the loop.
// http.fetch is the one built-in that leaves the sandbox: it sends through the
// transport it is given, which must be the session's egress proxy.
//
// This package is the edge where environment and workspace errors become agent
// error codes (FromErr). Output that reaches the model is capped (head and tail,
// with counts and truncated: true); the full output is kept as an artifact with a
// sha256 reference that artifact.read fetches by range: file contents through
// env.Export, command output in a coordinator-side Store.
//
// It deliberately does not decide what to call next, hold the permission state
// (its Gate does), keep budgets other than
// charging a tool's declared cost, retry anything, or touch the host filesystem:
// every built-in tool goes through the environment service, the only way to code.
package tool
