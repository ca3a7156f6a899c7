// Package client is the Go client of the agentbox HTTP API (`agentbox serve`): typed
// methods for environments, commands, files, patches, diffs and artifacts, the error
// envelope as a typed *Error, and a server-sent-events consumer that resumes a
// command's output stream after a broken connection without losing or repeating an
// event. It talks to a daemon on a Unix socket or over TCP.
//
// It does not read files, flags or environment variables (the caller passes the
// address and the token), does not retry requests other than an event stream's
// reconnection, and holds no state about environments: every call is one request.
//
// The wire types in this package are the API's JSON; the server encodes the same
// types, so a field added here is a field of the API.
package client
