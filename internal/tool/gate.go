package tool

import (
	"context"
	"encoding/json"

	"github.com/agentbox/agentbox/internal/policy"
)

// Describe says what a call will do, in the policy's terms (policy.Action), from
// its arguments once they passed the schema. An error refuses the call as the
// precondition would.
type Describe func(ctx context.Context, args json.RawMessage) (policy.Action, error)

// Gate decides every call of a registry before it runs: Registry.Call asks it
// after the schema and before the precondition, so the policy judges validated
// arguments and a refused or pending call touches nothing and costs nothing. The
// session's permission state (its policy, grants, taint) implements it.
type Gate interface {
	// Decide judges one call.
	Decide(ctx context.Context, c Call, a policy.Action) policy.Verdict
	// Observe sees the result of every call Decide allowed, failed or not, with
	// the verdict it ran under (to spend its one-time grants, which an allowed
	// call uses up whatever happens next, and to taint the session).
	Observe(c Call, a policy.Action, v policy.Verdict, e Envelope)
}

// action returns what the policy sees of a call: the tool's Describe, else its
// name and effect alone (which the risk function judges), with the server of a
// mounted MCP tool and its hints, never trusted.
func (s Spec) action(ctx context.Context, args json.RawMessage) (policy.Action, error) {
	a := policy.Action{}
	if s.Describe != nil {
		var err error
		if a, err = s.Describe(ctx, args); err != nil {
			return a, err
		}
	}
	a.Tool, a.Effect = s.Name, policy.Effect(s.Effect)
	if s.Server != "" {
		a.Server, a.Payload = s.Server, string(args)
		a.Hints = s.hints
		a.Hints.Trusted = false
	} else {
		ro, destructive, open := s.Effect == EffectRead, s.Effect == EffectWrite || s.Effect == EffectExec, s.Effect == EffectNetwork
		idem := s.Idempotent
		a.Hints = policy.Hints{ReadOnly: &ro, Destructive: &destructive, Idempotent: &idem, OpenWorld: &open, Trusted: true}
	}
	return a, nil
}
