// Package coordinator hosts agent sessions as a service, apart from the
// environments they work in: each session is a durable session (package
// journal, agent.RunDurable) in a directory of the coordinator's own state,
// driven in this process against an environment of an agentbox daemon it
// reaches over HTTP (wire.Remote). The coordinator holds the model credentials
// (through the Policy function its caller gives); the daemon holds the
// sandboxes; they share no filesystem and no credential.
//
// Either side can die without the other: a killed coordinator leaves the
// environment and its processes running in the daemon, and its next start
// resumes every unfinished session (recovery as agentbox resume does, in the
// same environment); a killed daemon leaves the coordinator serving, the call
// it was making recorded as failed by the tool that made it, its drivers
// waiting for the daemon, and a session whose environment the restarted daemon
// reaped resumed in a new one re-derived from its journal.
//
// Every session belongs to a tenant (Config.Tenants), recorded in its
// journal: each method takes the caller's tenant and finds only that tenant's
// sessions, and a session reaches the daemon only with its tenant's daemon
// client, so the daemon's tenant boundary holds between the coordinator's.
//
// It does not speak HTTP (package sessionapi does), authenticate anyone (it
// is told the tenant), or decide permissions itself: each session's Permissions do, and a person's
// answers go through the journal's mailbox (agent.AnswerRequest), the same
// path as agentbox sessions approve DIR.
package coordinator
