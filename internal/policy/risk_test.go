package policy

import (
	"slices"
	"testing"

	"github.com/agentbox/agentbox/internal/secret"
	"pgregory.net/rapid"
)

// The orders of the inputs, least dangerous first, as documented.
var (
	scopes    = []Scope{ScopeFile, ScopeTree, ScopeRepository, ScopeExternal, ScopeUnknown}
	revs      = []Reversibility{Reversible, Recoverable, Unknown, Irreversible}
	dests     = []Destination{DestNone, DestAllowlisted, DestOther}
	intents   = []IntentFit{IntentStated, IntentNone, IntentOutside}
	sandboxes = []Strength{SandboxVM, SandboxNamespace, SandboxProcess, SandboxNone} // strongest first
)

// TestRiskTable is the documented table: the seed's examples and what moves them.
func TestRiskTable(t *testing.T) {
	ns := SandboxNamespace
	for _, c := range []struct {
		name  string
		in    RiskInputs
		score int
		want  Decision
	}{
		{"read a project file", RiskInputs{Read, ScopeFile, Reversible, secret.Project, DestNone, IntentNone, ns, false}, 5, Allow},
		{"read a .env file", RiskInputs{Read, ScopeFile, Reversible, secret.Secret, DestNone, IntentNone, ns, false}, 25, Allow},
		{"read a credential", RiskInputs{Read, ScopeFile, Reversible, secret.Credential, DestNone, IntentNone, ns, false}, 35, Ask},
		{"write a file, overlay", RiskInputs{Write, ScopeFile, Reversible, secret.Project, DestNone, IntentNone, ns, false}, 20, Allow},
		{"write a file, bound workspace", RiskInputs{Write, ScopeFile, Recoverable, secret.Project, DestNone, IntentNone, ns, false}, 30, Allow},
		{"write a file on the host", RiskInputs{Write, ScopeFile, Recoverable, secret.Project, DestNone, IntentNone, SandboxNone, false}, 55, Ask},
		{"run a command offline", RiskInputs{Exec, ScopeTree, Reversible, secret.Project, DestNone, IntentNone, ns, false}, 30, Allow},
		{"run a command, process isolation", RiskInputs{Exec, ScopeTree, Reversible, secret.Project, DestNone, IntentNone, SandboxProcess, false}, 45, Ask},
		{"run a command in a VM", RiskInputs{Exec, ScopeTree, Reversible, secret.Project, DestNone, IntentNone, SandboxVM, false}, 30, Allow},
		{"run an opaque line", RiskInputs{Exec, ScopeUnknown, Reversible, secret.Project, DestNone, IntentNone, ns, false}, 45, Ask},
		{"run an opaque line, granted", RiskInputs{Exec, ScopeUnknown, Reversible, secret.Project, DestNone, IntentNone, ns, true}, 15, Allow},
		{"install with network", RiskInputs{Exec, ScopeTree, Recoverable, secret.Project, DestAllowlisted, IntentNone, ns, false}, 48, Ask},
		{"install with network, granted", RiskInputs{Exec, ScopeTree, Recoverable, secret.Project, DestAllowlisted, IntentNone, ns, true}, 18, Allow},
		{"install, stated intent", RiskInputs{Exec, ScopeTree, Recoverable, secret.Project, DestAllowlisted, IntentStated, ns, false}, 33, Allow},
		{"delete a tree", RiskInputs{Exec, ScopeTree, Recoverable, secret.Project, DestNone, IntentNone, ns, false}, 40, Ask},
		{"rewrite history", RiskInputs{Exec, ScopeRepository, Recoverable, secret.Project, DestNone, IntentNone, ns, false}, 45, Ask},
		{"push", RiskInputs{Exec, ScopeExternal, Irreversible, secret.Project, DestAllowlisted, IntentNone, ns, false}, 73, Ask},
		{"push, granted and stated", RiskInputs{Exec, ScopeExternal, Irreversible, secret.Project, DestAllowlisted, IntentStated, ns, true}, 28, Ask},
		{"GET an allowlisted host", RiskInputs{Network, ScopeExternal, Reversible, secret.Public, DestAllowlisted, IntentNone, ns, false}, 30, Allow},
		{"GET another host", RiskInputs{Network, ScopeExternal, Reversible, secret.Public, DestOther, IntentNone, ns, false}, 40, Ask},
		{"POST code to another host", RiskInputs{Network, ScopeExternal, Irreversible, secret.Project, DestOther, IntentNone, ns, false}, 84, Ask},
		{"POST a secret to another host", RiskInputs{Network, ScopeExternal, Irreversible, secret.Secret, DestOther, IntentNone, ns, false}, 100, Deny},
		{"POST a credential, granted and stated", RiskInputs{Network, ScopeExternal, Irreversible, secret.Credential, DestOther, IntentStated, ns, true}, 96, Deny},
		{"GET with a secret in the query, allowlisted", RiskInputs{Network, ScopeExternal, Reversible, secret.Secret, DestAllowlisted, IntentNone, ns, true}, 34, Ask},
		{"write in a read-only task", RiskInputs{Write, ScopeFile, Reversible, secret.Project, DestNone, IntentOutside, ns, false}, 40, Ask},
		{"finish", RiskInputs{Control, ScopeFile, Reversible, secret.Project, DestNone, IntentNone, ns, false}, 10, Allow},
	} {
		r := Assess(c.in)
		if r.Score != c.score || r.Decision != c.want {
			t.Errorf("%s: score %d %s, want %d %s (%v %s)", c.name, r.Score, r.Decision, c.score, c.want, r.Terms, r.Floor)
		}
	}
}

func drawInputs(t *rapid.T) RiskInputs {
	return RiskInputs{
		Effect:        rapid.SampledFrom(Effects).Draw(t, "effect"),
		Scope:         rapid.SampledFrom(scopes).Draw(t, "scope"),
		Reversibility: rapid.SampledFrom(revs).Draw(t, "rev"),
		Sensitivity:   rapid.SampledFrom(secret.Classes).Draw(t, "class"),
		Destination:   rapid.SampledFrom(dests).Draw(t, "dest"),
		Intent:        rapid.SampledFrom(intents).Draw(t, "intent"),
		Sandbox:       rapid.SampledFrom(sandboxes).Draw(t, "sandbox"),
		Granted:       rapid.Bool().Draw(t, "granted"),
	}
}

// up moves one input one step towards danger, or reports false at the end of
// its order.
func up[T comparable](order []T, v T) (T, bool) {
	i := slices.Index(order, v)
	if i < 0 || i+1 >= len(order) {
		return v, false
	}
	return order[i+1], true
}

// TestRiskMonotone: moving any one input towards danger never lowers the score
// or the decision. In particular more sensitive data never lowers the risk,
// holding a grant never raises it, and a stronger sandbox never raises it.
func TestRiskMonotone(t *testing.T) {
	moves := map[string]func(RiskInputs) (RiskInputs, bool){
		"effect": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Effect, ok = up(Effects, in.Effect)
			return in, ok
		},
		"scope": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Scope, ok = up(scopes, in.Scope)
			return in, ok
		},
		"reversibility": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Reversibility, ok = up(revs, in.Reversibility)
			return in, ok
		},
		"sensitivity": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Sensitivity, ok = up(secret.Classes, in.Sensitivity)
			return in, ok
		},
		"destination": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Destination, ok = up(dests, in.Destination)
			return in, ok
		},
		"intent": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Intent, ok = up(intents, in.Intent)
			return in, ok
		},
		"weaker sandbox": func(in RiskInputs) (RiskInputs, bool) {
			var ok bool
			in.Sandbox, ok = up(sandboxes, in.Sandbox)
			return in, ok
		},
		"grant dropped": func(in RiskInputs) (RiskInputs, bool) { ok := in.Granted; in.Granted = false; return in, ok },
	}
	for name, move := range moves {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				in := drawInputs(t)
				out, ok := move(in)
				if !ok {
					return
				}
				a, b := Assess(in), Assess(out)
				if b.Score < a.Score || b.Decision.Rank() < a.Decision.Rank() {
					t.Fatalf("%+v: %d %s\n%+v: %d %s", in, a.Score, a.Decision, out, b.Score, b.Decision)
				}
			})
		})
	}
}

// TestRiskEachInputMoves: every input, moved alone from some starting point,
// changes the decision in its documented direction.
func TestRiskEachInputMoves(t *testing.T) {
	ns := SandboxNamespace
	base := RiskInputs{Exec, ScopeTree, Reversible, secret.Project, DestNone, IntentNone, ns, false} // 30: allow
	for _, c := range []struct {
		name string
		in   RiskInputs
		want Decision
	}{
		{"effect", func() RiskInputs { b := base; b.Effect = Read; b.Sandbox = SandboxProcess; return b }(), Allow},
		{"scope", func() RiskInputs { b := base; b.Scope = ScopeUnknown; return b }(), Ask},
		{"reversibility", func() RiskInputs { b := base; b.Reversibility = Irreversible; return b }(), Ask},
		{"sensitivity", func() RiskInputs { b := base; b.Sensitivity = secret.Secret; return b }(), Ask},
		{"destination", func() RiskInputs { b := base; b.Destination = DestOther; return b }(), Ask},
		{"intent outside", func() RiskInputs { b := base; b.Intent = IntentOutside; return b }(), Ask},
		{"sandbox", func() RiskInputs { b := base; b.Sandbox = SandboxNone; return b }(), Ask},
	} {
		if got := Assess(c.in).Decision; got != c.want {
			t.Errorf("%s: %s, want %s (%v)", c.name, got, c.want, Assess(c.in).Terms)
		}
	}
	// And back down: a grant or a stated intent brings an ask to allow.
	ask := base
	ask.Scope = ScopeUnknown
	for _, f := range []func(*RiskInputs){func(r *RiskInputs) { r.Granted = true }, func(r *RiskInputs) { r.Intent = IntentStated }} {
		in := ask
		f(&in)
		if Assess(in).Decision != Allow {
			t.Errorf("%+v is not allowed: %v", in, Assess(in).Terms)
		}
	}
	// The floors: no grant or intent brings an irreversible need, or secret data
	// that can leave, below ask.
	low := RiskInputs{Read, ScopeFile, Irreversible, secret.Public, DestNone, IntentStated, SandboxVM, true}
	if r := Assess(low); r.Decision != Ask || r.Floor == "" {
		t.Errorf("irreversible floor: %+v", r)
	}
	low = RiskInputs{Read, ScopeFile, Reversible, secret.Secret, DestAllowlisted, IntentStated, SandboxVM, true}
	if r := Assess(low); r.Decision != Ask || r.Floor == "" {
		t.Errorf("exposure floor: %+v", r)
	}
}
