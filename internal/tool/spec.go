package tool

import (
	"context"
	"encoding/json"

	"github.com/agentbox/agentbox/internal/policy"
)

// Effect says what a tool can change, for authorisation, approval and recovery.
type Effect string

const (
	EffectRead    Effect = "read"    // reads the workspace; no change anywhere
	EffectWrite   Effect = "write"   // changes the workspace
	EffectExec    Effect = "exec"    // runs code in the sandbox (may change the workspace)
	EffectNetwork Effect = "network" // talks to something outside the sandbox
	EffectControl Effect = "control" // changes the session itself (finishing it)
)

// Handler runs a call whose arguments have passed the schema and precondition. It
// returns an error for a failure the policy should see (an *Error, or an env or
// workspace error that FromErr maps).
type Handler func(ctx context.Context, args json.RawMessage) (Result, error)

// Precondition refuses a call before it runs. A non-nil error that is not an *Error
// becomes EPRECONDITION with the error's text.
type Precondition func(ctx context.Context, args json.RawMessage) error

// Result is what a handler produced.
type Result struct {
	Data      any    // marshalled into Envelope.Data; must match the output schema
	Text      string // bulk output, already capped
	Refs      []Ref
	Source    string
	Truncated bool
	// Done ends the session successfully (control tools only).
	Done bool
}

// Spec describes one tool.
type Spec struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema (draft 2020-12 or draft-07) for the arguments
	// object; OutputSchema, optional, for Data.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Effect       Effect
	// Idempotent says that repeating a call with the same arguments has no effect
	// beyond the first; a recovering session may re-run such a call.
	Idempotent bool
	// Scope is the authorisation a call needs; the registry runs only tools whose
	// scope it was granted.
	Scope        string
	Precondition Precondition
	Cost         Cost
	Handler      Handler
	// Describe tells a registry's Gate what a call does (the paths it reads and
	// writes, the command it runs, the URL it fetches). Nil: the gate knows the
	// tool by its name and effect only.
	Describe Describe
	// Reattach, if set, finds a call's process again after its driver died
	// (the Progress the handler told; Registry.Reattach).
	Reattach Reattach
	// Server is the MCP server a mounted tool comes from ("" for a built-in): its
	// calls are judged as the server's, with its arguments as what they send.
	Server string
	hints  policy.Hints // a mounted tool's annotations, as the server claims them
}

// Def is a tool as MCP lists it (tools/list): the shape offered to models and MCP
// clients.
type Def struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Annotations are MCP's tool hints. They are hints: a server's claims about its own
// tool, not something this package trusts for authorisation.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Def returns the tool's MCP description, with annotations that follow from its
// effect.
func (s Spec) Def() Def {
	ro := s.Effect == EffectRead
	destructive := s.Effect == EffectWrite || s.Effect == EffectExec
	open := s.Effect == EffectNetwork
	idem := s.Idempotent
	return Def{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema, OutputSchema: s.OutputSchema,
		Annotations: &Annotations{ReadOnlyHint: &ro, DestructiveHint: &destructive, IdempotentHint: &idem, OpenWorldHint: &open}}
}

// FromMCP makes a Spec for a tool an MCP server lists, to be registered like a
// built-in one; call forwards a call to the server (tools/call). The effect is
// decided from the annotations pessimistically, as the MCP specification's defaults
// are: a tool is read-only only if it says so and says it is not open-world;
// open-world (the default) is network; anything else is write. scope is the
// operator's decision and is never taken from the server; so is Server, which the
// caller sets to the server's name.
func FromMCP(d Def, scope string, call Handler) Spec {
	a := d.Annotations
	if a == nil {
		a = &Annotations{}
	}
	is := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	effect := EffectWrite
	switch {
	case is(a.OpenWorldHint, true):
		effect = EffectNetwork
	case is(a.ReadOnlyHint, false):
		effect = EffectRead
	}
	return Spec{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema,
		Effect: effect, Idempotent: is(a.IdempotentHint, false) && effect == EffectRead, Scope: scope, Handler: call,
		hints: policy.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}}
}
