package policy

import "fmt"

// Decision is what the policy says of a call: run it, ask a person, or refuse it.
type Decision string

const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// Rank orders decisions so that the stricter wins: allow 0 < ask 1 < deny 2.
func (d Decision) Rank() int {
	switch d {
	case Allow:
		return 0
	case Ask:
		return 1
	case Deny:
		return 2
	}
	return -1
}

// Stricter returns the stricter of two decisions.
func Stricter(a, b Decision) Decision {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

func (d *Decision) UnmarshalText(b []byte) error {
	switch v := Decision(b); v {
	case Allow, Ask, Deny:
		*d = v
		return nil
	}
	return fmt.Errorf("unknown decision %q (want allow, ask or deny)", b)
}

// Effect is what a tool can change. The values are those of package tool's
// Effect, so the integration converts with Effect(spec.Effect).
type Effect string

const (
	Read    Effect = "read"
	Write   Effect = "write"
	Exec    Effect = "exec"
	Network Effect = "network"
	Control Effect = "control"
)

// Effects lists the effects in the order of their own weight in the risk
// function, least first.
var Effects = []Effect{Read, Control, Network, Write, Exec}

func (e *Effect) UnmarshalText(b []byte) error {
	for _, x := range Effects {
		if string(b) == string(x) {
			*e = x
			return nil
		}
	}
	return fmt.Errorf("unknown effect %q (want read, write, exec, network or control)", b)
}

// Hints are a tool's MCP annotations (readOnlyHint, destructiveHint,
// idempotentHint, openWorldHint). A nil hint is the MCP default: not read-only,
// destructive, not idempotent, open-world. Trusted is set only for hints the
// operator's own code wrote (the built-in tools'); a server's hints about its own
// tool are never trusted: they may make a call stricter, never allow it.
type Hints struct {
	ReadOnly    *bool `json:"read_only,omitempty" yaml:"read_only"`
	Destructive *bool `json:"destructive,omitempty" yaml:"destructive"`
	Idempotent  *bool `json:"idempotent,omitempty" yaml:"idempotent"`
	OpenWorld   *bool `json:"open_world,omitempty" yaml:"open_world"`
	Trusted     bool  `json:"trusted,omitempty" yaml:"-"`
}

// hint is one of the four annotations, with its MCP default and the value that is
// the more dangerous claim.
type hint struct {
	name        string
	get         func(Hints) *bool
	def, unsafe bool
}

var hintList = []hint{
	{"read_only", func(h Hints) *bool { return h.ReadOnly }, false, false},
	{"destructive", func(h Hints) *bool { return h.Destructive }, true, true},
	{"idempotent", func(h Hints) *bool { return h.Idempotent }, false, false},
	{"open_world", func(h Hints) *bool { return h.OpenWorld }, true, true},
}

func (h hint) value(hs Hints) bool {
	if p := h.get(hs); p != nil {
		return *p
	}
	return h.def
}
