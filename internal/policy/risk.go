package policy

import (
	"fmt"

	"github.com/agentbox/agentbox/internal/secret"
)

// Scope is how far a need reaches, narrowest first.
type Scope string

const (
	ScopeFile       Scope = "file"       // one workspace file
	ScopeTree       Scope = "tree"       // many files, a directory, the workspace (a command)
	ScopeRepository Scope = "repository" // version-control metadata and history (.git, history rewrites)
	ScopeExternal   Scope = "external"   // beyond the sandbox: a host, a registry, a deployment
	ScopeUnknown    Scope = "unknown"    // cannot be known (an opaque command line)
)

// Reversibility is how well a need's effect can be undone, best first.
type Reversibility string

const (
	Reversible   Reversibility = "reversible"   // nothing changes, or the overlay discards it
	Recoverable  Reversibility = "recoverable"  // undone with work (a bound workspace, downloads run)
	Unknown      Reversibility = "unknown"      // cannot be told (a tool's own claims are not trusted)
	Irreversible Reversibility = "irreversible" // leaves the sandbox for good: sent, pushed, published
)

// Destination is where a need's data can go, nearest first.
type Destination string

const (
	DestNone        Destination = "none"        // nowhere: no network
	DestAllowlisted Destination = "allowlisted" // a host the sandbox's egress allows, a mounted MCP server
	DestOther       Destination = "other"       // any other host
)

// IntentFit is how a need fits what the user asked for.
type IntentFit string

const (
	IntentStated  IntentFit = "stated"  // the user's stated intent names it
	IntentNone    IntentFit = "none"    // the intent says nothing of it
	IntentOutside IntentFit = "outside" // the intent excludes it (a read-only task that writes)
)

// Strength is the isolation a call runs under, weakest first.
type Strength string

const (
	SandboxNone      Strength = "none"      // on the host
	SandboxProcess   Strength = "process"   // rlimits and a process group (--isolation process)
	SandboxNamespace Strength = "namespace" // namespaces, Landlock, seccomp, cgroup (the default)
	SandboxVM        Strength = "vm"        // a user-space kernel or a virtual machine
)

// RiskInputs are the inputs of the risk function, one value each.
type RiskInputs struct {
	Effect        Effect        `json:"effect"`
	Scope         Scope         `json:"scope"`
	Reversibility Reversibility `json:"reversibility"`
	Sensitivity   secret.Class  `json:"sensitivity"`
	Destination   Destination   `json:"destination"`
	Intent        IntentFit     `json:"intent"`
	Sandbox       Strength      `json:"sandbox"`
	Granted       bool          `json:"granted"` // a session grant covers the need
}

// Risk is the risk function's answer, with its inputs and the terms that made it,
// as the event log records it.
type Risk struct {
	Inputs   RiskInputs `json:"inputs"`
	Score    int        `json:"score"`
	Decision Decision   `json:"decision"`
	// Terms are the contributions, in order: "effect exec +15", "granted -30".
	Terms []string `json:"terms"`
	// Floor names the rule that kept the decision at ask or above, if any.
	Floor string `json:"floor,omitempty"`
}

// Thresholds of the risk score: below AllowBelow allow, below DenyFrom ask, else
// deny.
const (
	AllowBelow = 35
	DenyFrom   = 90
)

// The weights of the risk function. Every table is non-decreasing in the order of
// its type's constants, the exposure term is a product of two non-negative
// non-decreasing factors, and the sandbox, intent and grant terms never grow as
// the sandbox strengthens, the intent fits better or a grant is held: so the
// score, and the decision, only move up with danger (TestRiskMonotone).
var (
	// A network call's own weight is low: what it risks is carried by its
	// destination and the exposure of its data.
	effectWeight = map[Effect]int{Read: 0, Control: 5, Network: 10, Write: 15, Exec: 15}
	scopeWeight  = map[Scope]int{ScopeFile: 0, ScopeTree: 10, ScopeRepository: 15, ScopeExternal: 15, ScopeUnknown: 25}
	revWeight    = map[Reversibility]int{Reversible: 0, Recoverable: 10, Unknown: 20, Irreversible: 30}
	// Sensitivity counts on its own (the model's provider sees what is read) and,
	// multiplied by how far the data can go, as exposure.
	classWeight    = map[secret.Class]int{secret.Public: 0, secret.Project: 5, secret.Secret: 25, secret.Credential: 35}
	classFactor    = map[secret.Class]int{secret.Public: 0, secret.Project: 1, secret.Secret: 3, secret.Credential: 4}
	destWeight     = map[Destination]int{DestNone: 0, DestAllowlisted: 5, DestOther: 15}
	destFactor     = map[Destination]int{DestNone: 0, DestAllowlisted: 1, DestOther: 3}
	exposureWeight = 3
	// The sandbox matters for what changes, runs or sends.
	sandboxWeight = map[Strength]int{SandboxVM: 0, SandboxNamespace: 0, SandboxProcess: 15, SandboxNone: 25}
	intentWeight  = map[IntentFit]int{IntentStated: -15, IntentNone: 0, IntentOutside: 20}
	grantWeight   = -30
)

// Assess is the risk function:
//
//	score = effect + scope + reversibility + sensitivity + destination
//	      + 3 × sensitivity factor × destination factor      (exposure)
//	      + sandbox (write, exec and network) + intent + grant
//
// clamped to 0..100, with the weights above. The decision is allow below 35, ask
// below 90, deny from 90; and, whatever the score, at least ask for an
// irreversible need and for secret or credential data that can reach a network
// destination (the floors: a grant or a stated intent lowers the score, never
// below ask for these).
func Assess(in RiskInputs) Risk {
	r := Risk{Inputs: in}
	add := func(name string, v any, w int) {
		r.Score += w
		if w != 0 {
			r.Terms = append(r.Terms, fmt.Sprintf("%s %v %+d", name, v, w))
		}
	}
	add("effect", in.Effect, effectWeight[in.Effect])
	add("scope", in.Scope, scopeWeight[in.Scope])
	add("reversibility", in.Reversibility, revWeight[in.Reversibility])
	add("sensitivity", in.Sensitivity, classWeight[in.Sensitivity])
	add("destination", in.Destination, destWeight[in.Destination])
	add("exposure", fmt.Sprintf("%s→%s", in.Sensitivity, in.Destination), exposureWeight*classFactor[in.Sensitivity]*destFactor[in.Destination])
	if in.Effect == Write || in.Effect == Exec || in.Effect == Network {
		add("sandbox", in.Sandbox, sandboxWeight[in.Sandbox])
	}
	add("intent", in.Intent, intentWeight[in.Intent])
	if in.Granted {
		add("granted", true, grantWeight)
	}
	r.Score = max(0, min(100, r.Score))
	switch {
	case r.Score < AllowBelow:
		r.Decision = Allow
	case r.Score < DenyFrom:
		r.Decision = Ask
	default:
		r.Decision = Deny
	}
	if r.Decision == Allow {
		switch {
		case in.Reversibility == Irreversible:
			r.Decision, r.Floor = Ask, "irreversible: asked every time"
		case in.Sensitivity.Sensitive() && in.Destination != DestNone:
			r.Decision, r.Floor = Ask, "sensitive data that can leave"
		}
	}
	return r
}
