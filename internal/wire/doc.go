// Package wire is the service edge's language: the HTTP API's types (those of
// package client, the one shape of each request and answer) and the envelope every
// error reaches a caller in. Map turns an error into a status and an envelope by one
// table, in order (the sentinels of env, workspace and access, errnos, a remote
// daemon's own envelopes), redacting host paths and keeping another tenant's
// objects indistinguishable from missing ones. The HTTP server and the MCP tools
// both answer through it, so a failure reads the same on either.
//
// It holds no state and checks no one's rights (package access does); it decides
// nothing about what an environment may do.
package wire
