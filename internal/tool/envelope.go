package tool

import (
	"encoding/json"
	"time"

	"github.com/agentbox/agentbox/internal/policy"
)

// Envelope is what every tool call returns, success or failure. The model sees it
// (rendered by Render); the trace records it whole.
type Envelope struct {
	OK bool `json:"ok"`
	// Data is the tool's structured output (matching its output schema); null on
	// failure.
	Data json.RawMessage `json:"data"`
	// Text is the bulk output (file content, matches), already capped; the model
	// sees it raw after the JSON header, so code is not JSON-escaped.
	Text  string `json:"text,omitempty"`
	Error *Error `json:"error"`
	// Refs point at artifacts holding what was cut from Data or Text.
	Refs []Ref `json:"refs"`
	Cost Cost  `json:"cost"`
	// ObservedAt is when the result was produced (the only field that differs
	// between two identical calls).
	ObservedAt time.Time `json:"observed_at"`
	// Source says where the content came from (a path, a command), for provenance.
	Source string `json:"source,omitempty"`
	// Truncated means Data or Text is not the whole output.
	Truncated bool `json:"truncated,omitempty"`
}

// Cost is what a tool call is declared to cost. Units are abstract (the budget
// counts them as the tool's author meant); USD is charged to the session's money
// budget before the handler runs.
type Cost struct {
	Units float64 `json:"units,omitempty"`
	USD   float64 `json:"usd,omitempty"`
}

// Ref points at an artifact: "sha256:<hex>" of its content.
type Ref struct {
	Ref  string `json:"ref"`
	Size int64  `json:"size"`
	Name string `json:"name,omitempty"`
	// Source describes what the artifact holds ("file:calc.py", "exec:stdout").
	Source string `json:"source,omitempty"`
	// Store is where the artifact lives: "environment" (env.Export) or
	// "coordinator" (this process's Store). artifact.read reads either.
	Store string `json:"store"`
}

// Outcome is the result of one Registry.Call: the envelope and what the loop needs
// besides it.
type Outcome struct {
	Envelope Envelope
	// Done is set by a control tool that ended the task (task.finish).
	Done bool
	// Effect is the called tool's effect ("" for an unknown tool).
	Effect Effect
	// Duration is the wall time of the whole call, checks included.
	Duration time.Duration
	// Verdict is the registry's Gate's decision, if it has one and the call got
	// that far. With an EASK envelope, its asks are what a person must approve
	// before the same call is made again.
	Verdict *policy.Verdict
	// Internal holds detail the model must not see (a handler's panic value, an
	// unmapped error); the loop records it in the event log.
	Internal string
}

func failure(e *Error, at time.Time) Envelope {
	return Envelope{OK: false, Data: json.RawMessage("null"), Error: e, Refs: []Ref{}, ObservedAt: at}
}
