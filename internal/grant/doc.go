// Package grant holds what a person has granted a session: capabilities, not
// commands ("write under src/ for this task", "reach registry.npmjs.org", "run the
// test command"), each bound to the goal revision it was given under, and the
// approval requests that ask for them.
//
// A Set is one session's grants; it implements policy.Grants. A grant is either
// for the session (a policy.Capability pattern) or for one call (a one-time grant:
// the exact need, for that call id, spent when the call runs). Needs that are
// irreversible, released from a tainted session or asked every time by their rule
// are covered by one-time grants only (package policy enforces that); everything
// else a session grant covers until the goal changes.
//
// Goal revisions (seed 004, "Steering"): every grant records the revision it was
// given under. A supplement (an added acceptance criterion) or a query keeps every
// grant; a correction or a replacement of the goal drops every grant given before
// it, since what the person allowed was for a task that is no longer the task
// (Set.Steer returns the dropped grants for the event log). A grant fits a
// revision if no correction or replacement came after it (Goal.Fits).
//
// Requests: the asks of a verdict become Items, each with the capability granting
// it would give (Suggest: the directory of a path, the program and subcommand of a
// command line, the host of a URL; never wider for sensitive reads, and the exact
// need for one-time items); Group presents consecutive low-risk items as one
// Request and each one-time item on its own. Resolve turns a person's Answer into
// grants.
//
// Approvals (ParseApprovals) pre-answer requests by capability for runs without a
// person (`--approvals FILE` for evals): deny entries win over allow entries, and
// a request no entry answers is unanswered — the session stops with policy_stop
// (or, with `unanswered: deny`, the call is refused), never a silent allow.
//
// Delegation: Fork gives a subagent the parent's session grants that fit; what a
// person grants the child stays with the child.
//
// It deliberately does not decide (package policy does), persist grants (the
// session's event log records GrantGiven and GrantDropped) or talk to anyone.
package grant
