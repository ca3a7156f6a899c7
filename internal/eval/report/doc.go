// Package report writes the results of an `agentbox eval` run: report.json (the
// Report, for programs, with per-task aggregates and pass@k), report.md (the
// results table and the summary, for a pull request or a chat), report.html (one
// self-contained viewer: filters, per-task aggregates, SVG charts and, per
// attempt, the model's transcript, its diff, the verdict and the test output) and
// a plain-text table for the terminal. Compare sets two runs side by side per
// task (`agentbox report compare`).
//
// Diffs, logs and traces are written by the agent or by the code it changed, so the
// HTML page treats them as hostile: everything goes through html/template, each
// embedded file and transcript message is capped, and the page carries a
// Content-Security-Policy that allows no network load and no script but its own
// (viewer.js, by hash), which only hides rows and sets text and never builds
// markup; so it opens offline and an escaping bug would still not make attacker
// markup live. Terminal output has control characters replaced so a task id
// cannot drive the terminal.
//
// It does not run attempts or grade them; it computes counts, aggregates and
// pass@k (Summarize, Tasks, PassAtK). It does not follow files outside the
// results directory, and a missing per-attempt file is shown as "not recorded"
// rather than failing the report.
package report
