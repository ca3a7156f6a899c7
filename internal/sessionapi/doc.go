// Package sessionapi is the coordinator's HTTP API (api/coordinator.yaml): it
// authenticates each request by its bearer token (access.Auth, over the
// coordinator's tokens: config.Coordinator), decodes and checks it, calls the
// coordinator.Host for the token's tenant, and maps the result or the error to
// the API's JSON and status (the envelope of the environment API,
// client.Error). Events are server-sent events whose ids are the journal's
// seqs.
//
// It does not run sessions or decide which tenant's they are (package
// coordinator does: a session another tenant made is not found, 404, as one
// that does not exist) and takes no token but the Authorization header's.
package sessionapi
