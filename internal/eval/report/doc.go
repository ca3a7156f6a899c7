// Package report writes the results of an `agentbox eval` run: report.json (the
// Report, for programs), report.md (the results table and the summary, for a pull
// request or a chat), report.html (one self-contained page with, per attempt, the
// agent's step timeline, its diff, the verdict and the test output) and a plain-text
// table for the terminal.
//
// Diffs, logs and traces are written by the agent or by the code it changed, so the
// HTML page treats them as hostile: everything goes through html/template, each
// embedded file is capped, and the page carries a Content-Security-Policy that
// allows no script and no network load at all, so it opens offline and an escaping
// bug would still not make attacker markup live. Terminal output has control
// characters replaced so a task id cannot drive the terminal.
//
// It does not run attempts, grade them or compute anything but counts (Summarize);
// it does not follow files outside the results directory, and a missing per-attempt
// file is shown as "not recorded" rather than failing the report.
package report
