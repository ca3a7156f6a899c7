// Package sessionapi is the coordinator's HTTP API (api/coordinator.yaml): it
// authenticates each request by its bearer token, decodes and checks it, calls
// the coordinator.Host, and maps the result or the error to the API's JSON
// and status (the envelope of the environment API, client.Error). Events are
// server-sent events whose ids are the journal's seqs.
//
// It does not run sessions (package coordinator does) and has one token, not
// tenants: a coordinator serves one operator, and every session it hosts
// works in environments of the one tenant its environment-daemon token names.
package sessionapi
