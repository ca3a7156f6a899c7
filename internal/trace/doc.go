// Package trace records agent sessions. A session is an append-only sequence of
// Events with a seq that increases by one; each event is self-contained (it carries
// its session, step and call id) and has an id, session/seq, that a store can use
// to make appends idempotent. The JSONL trace — one line per step: step, decision,
// result, duration_ms, budget_before, state, usage — is a projection of the events
// (Projector, Project), so both can never disagree.
//
// It also reads traces back (ReadSteps, ReadEvents, Load), computes the metrics of
// `agentbox trace stats` from them (ComputeStats), and finds the first step where
// two traces diverge (Diverge). Re-driving a recorded session through the loop is
// package agent's Replay, which reads what this package loads.
//
// It deliberately does not store events durably or recover a crashed session
// (the events are designed for that: the tool call's effect and idempotency are
// recorded before it runs, the model's usage as each response arrives), and it
// does not decide what is secret: Log scrubs the strings it is given from every
// event before any sink sees it.
package trace
