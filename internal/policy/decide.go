package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/secret"
	"github.com/agentbox/agentbox/internal/taint"
)

// Grants answers whether a person granted a need. Package grant's Set implements
// it.
type Grants interface {
	// Cover returns the grant covering the need for the call, if any. A one-time
	// grant covers only the call it was given for.
	Cover(n Need, call string) (GrantRef, bool)
}

// GrantRef names the grant that covered a need.
type GrantRef struct {
	ID   string `json:"id"`
	Once bool   `json:"once,omitempty"` // given for one call, consumed when it runs
}

// Intent is what the user stated the task is for: it moves the risk of a need
// (IntentFit), never decides by itself.
type Intent struct {
	// ReadOnly: the user asked for no change (a review, a question).
	ReadOnly bool `json:"read_only,omitempty"`
	// Stated are capabilities the user's goal names ("run the tests",
	// "write under src/").
	Stated []Capability `json:"stated,omitempty"`
}

// Context is what the policy knows of the session beyond the call.
type Context struct {
	Call    string // the tool call's id, for one-time grants
	Grants  Grants // nil: none
	Taint   []taint.Label
	Sandbox Strength // "" is SandboxNone
	Overlay bool     // workspace changes can be discarded (a copy-on-write workspace)
	// Allowlist is the sandbox's egress allowlist, parsed (egress.ParseAllow): a
	// host on it is an allowlisted destination, any other is other.
	Allowlist []egress.Pattern
	Intent    Intent
}

func (c Context) destination(host string, port uint16) Destination {
	for _, p := range c.Allowlist {
		if p.Match(host, port) {
			return DestAllowlisted
		}
	}
	return DestOther
}

func (c Context) fit(n Need, e Effect) IntentFit {
	if c.Intent.ReadOnly && e != Read && e != Control {
		return IntentOutside
	}
	for _, s := range c.Intent.Stated {
		if s.Covers(n) {
			return IntentStated
		}
	}
	return IntentNone
}

// Verdict is the policy's answer for one call, with everything the event log
// records of it.
type Verdict struct {
	Decision Decision    `json:"decision"`
	Needs    []Judgement `json:"needs"`
	// Sensitive is the class of sensitive data the call reads under the
	// sensitive:read capability ("" if none): its result taints the session.
	Sensitive secret.Class `json:"sensitive,omitempty"`
	// Confine is set for an outgoing call of a tainted session: its sandbox's
	// egress must allow only the hosts of the releases among Needs, for this call.
	Confine bool `json:"confine,omitempty"`
}

// Judgement is the decision of one need.
type Judgement struct {
	Need     Need     `json:"need"`
	Decision Decision `json:"decision"`
	// Rule is the rule that decided, "risk" if none did, "release" for a tainted
	// session's outgoing data, "refuse" for a need nothing can allow.
	Rule  string    `json:"rule"`
	Grant *GrantRef `json:"grant,omitempty"`
	// EveryTime: an approval allows this call only.
	EveryTime bool          `json:"every_time,omitempty"`
	Risk      Risk          `json:"risk"`
	Taint     []taint.Label `json:"taint,omitempty"` // what taints the data of a release
	Show      []string      `json:"show,omitempty"`
	Why       string        `json:"why"`
}

// Asks returns the needs a person must approve for the call to run.
func (v Verdict) Asks() []Judgement {
	var out []Judgement
	for _, j := range v.Needs {
		if j.Decision == Ask {
			out = append(out, j)
		}
	}
	return out
}

// Grants returns the grants the call used; the one-time ones are spent when the
// call runs.
func (v Verdict) Grants() []GrantRef {
	var out []GrantRef
	for _, j := range v.Needs {
		if j.Grant != nil && !slices.Contains(out, *j.Grant) {
			out = append(out, *j.Grant)
		}
	}
	return out
}

// Reason is one line for the model or a person: the first need that decided.
func (v Verdict) Reason() string {
	for _, j := range v.Needs {
		if j.Decision == v.Decision {
			return j.Why
		}
	}
	return ""
}

// Decide decides one call. Each need of the action is decided on its own and the
// strictest decision wins (deny > ask > allow):
//
//  1. A need nothing can allow (a path outside the workspace, a URL that is not
//     http or https, an address for a host) is denied.
//  2. The rules that match the need decide: allow; ask, unless a grant covers it
//     (for every_time rules only a one-time grant for this call does); deny,
//     unless the rule is grantable and a grant covers it. The strictest wins. An
//     irreversible need (a push, a publish, a request that is not GET or HEAD, a
//     tool that says it is destructive) is covered by one-time grants only.
//  3. Where no rule matches, the risk function decides (Assess), with a grant
//     lowering the score and a one-time grant for this call allowing.
//  4. In a tainted session, or when the payload itself holds a secret, each
//     outgoing need (a host reached, an exec with network, an open-world MCP
//     tool) also needs a release of each tainted class to its destination: only a
//     one-time grant for this call allows it, no rule does; without one it is
//     asked (and a destination the policy cannot name cannot be released: the
//     call is confined to released hosts instead).
func (p *Policy) Decide(a Action, c Context) Verdict {
	if c.Sandbox == "" {
		c.Sandbox = SandboxNone
	}
	v := Verdict{Decision: Allow}
	atoms := a.atoms(c)
	for _, at := range atoms {
		j := p.judge(a, at, c)
		v.Needs = append(v.Needs, j)
		if at.need.Kind == KindSensitiveRead && j.Decision == Allow {
			v.Sensitive = secret.Max(v.Sensitive, at.class)
		}
	}
	for _, at := range atoms {
		if !at.outgoing {
			continue
		}
		labels := slices.Clone(c.Taint)
		if at.class.Sensitive() {
			labels = append(labels, taint.Label{Class: at.class, Source: "the call's own payload", Rule: "payload"})
		}
		if len(labels) == 0 {
			continue
		}
		v.Confine = true
		host := at.need.Host
		switch {
		case at.need.Kind == KindTool && a.Server != "":
			host = "mcp:" + a.Server
		case at.need.Kind == KindExec:
			continue // confined: the sandbox's egress proxy opens only released hosts
		case host == "":
			host = "*" // a destination nobody can name: released only by a grant for any host
		}
		for _, class := range taint.ClassesOf(labels) {
			v.Needs = append(v.Needs, release(Need{Kind: KindRelease, Class: class, Host: host, Port: at.need.Port}, at, labels, c))
		}
	}
	for _, j := range v.Needs {
		v.Decision = Stricter(v.Decision, j.Decision)
	}
	return v
}

func release(n Need, at atom, labels []taint.Label, c Context) Judgement {
	var from []taint.Label
	for _, l := range labels {
		if l.Class == n.Class {
			from = append(from, l)
		}
	}
	j := Judgement{Need: n, Rule: "release", EveryTime: true, Taint: from, Show: []string{"domain", "data"}}
	var g GrantRef
	ok := false
	if c.Grants != nil {
		g, ok = c.Grants.Cover(n, c.Call)
		ok = ok && g.Once
	}
	j.Risk = Assess(RiskInputs{Effect: Network, Scope: ScopeExternal, Reversibility: Irreversible, Sensitivity: n.Class,
		Destination: at.dest, Intent: c.fit(n, Network), Sandbox: c.Sandbox, Granted: ok})
	if ok {
		j.Grant, j.Decision = &g, Allow
		j.Why = fmt.Sprintf("released once: %s data to %s", n.Class, hostPort(n.Host, n.Port))
		return j
	}
	var src []string
	for _, l := range from {
		src = append(src, l.Source+" ("+l.Rule+")")
	}
	j.Decision = Ask
	j.Why = fmt.Sprintf("the session holds %s data from %s; sending to %s needs a one-time release of %s data to %s",
		n.Class, strings.Join(src, ", "), hostPort(n.Host, n.Port), n.Class, hostPort(n.Host, n.Port))
	return j
}

func (p *Policy) judge(a Action, at atom, c Context) Judgement {
	j := Judgement{Need: at.need}
	var g GrantRef
	covered := false
	if c.Grants != nil {
		g, covered = c.Grants.Cover(at.need, c.Call)
	}
	if at.rev == Irreversible {
		// What cannot be undone is approved call by call: a session grant does
		// not cover it.
		j.EveryTime = true
		covered = covered && g.Once
	}
	j.Risk = Assess(RiskInputs{Effect: at.effect, Scope: at.scope, Reversibility: at.rev, Sensitivity: at.class,
		Destination: at.dest, Intent: c.fit(at.need, at.effect), Sandbox: c.Sandbox, Granted: covered})
	if at.refuse != "" {
		j.Decision, j.Rule, j.Why = Deny, "refuse", at.refuse
		return j
	}
	matched, used := false, false
	for _, r := range p.rules {
		d, ok := r.decide(a, at, covered, g)
		if !ok {
			continue
		}
		if !matched || d.Rank() > j.Decision.Rank() {
			j.Decision, j.Rule = d, r.Name
		}
		matched = true
		used = used || d == Allow && r.Decision != Allow
		j.EveryTime = j.EveryTime || r.EveryTime && d == Ask
		for _, s := range r.Show {
			if !slices.Contains(j.Show, s) {
				j.Show = append(j.Show, s)
			}
		}
	}
	used = used && j.Decision == Allow
	if !matched {
		j.Rule, j.Decision = "risk", j.Risk.Decision
		if covered && g.Once {
			j.Decision = Allow
		}
		used = covered && j.Decision == Allow
	}
	if used {
		j.Grant = &g
	}
	j.Why = why(j, at)
	return j
}

func why(j Judgement, at atom) string {
	n := at.need.String()
	switch {
	case j.Rule == "risk":
		s := fmt.Sprintf("%s: %s by risk %d (%s)", n, j.Decision, j.Risk.Score, strings.Join(j.Risk.Terms, ", "))
		if j.Risk.Floor != "" {
			s += "; " + j.Risk.Floor
		}
		return s
	case j.Decision == Deny && at.need.Kind == KindSensitiveRead:
		return fmt.Sprintf("%s: denied by rule %s: this path holds %s data and needs the sensitive:read capability, which this session was not granted", n, j.Rule, at.class)
	case j.Grant != nil:
		return fmt.Sprintf("%s: allowed by grant %s (rule %s)", n, j.Grant.ID, j.Rule)
	case j.EveryTime && j.Decision == Ask:
		return fmt.Sprintf("%s: asked by rule %s, every time", n, j.Rule)
	}
	return fmt.Sprintf("%s: %s by rule %s", n, j.Decision, j.Rule)
}

// decide returns the rule's decision of a need, given whether a grant covers it,
// and false if the rule does not match.
func (r *rule) decide(a Action, at atom, covered bool, g GrantRef) (Decision, bool) {
	if !r.match(a, at) {
		return "", false
	}
	switch r.Decision {
	case Ask:
		if covered && (!r.EveryTime || g.Once) {
			return Allow, true
		}
		return Ask, true
	case Deny:
		if r.Grantable && covered {
			return Allow, true
		}
		return Deny, true
	}
	return Allow, true
}

func (r *rule) match(a Action, at atom) bool {
	if len(r.Tools) > 0 && !slices.ContainsFunc(r.Tools, func(p string) bool { return glob(p, a.Tool) }) {
		return false
	}
	if len(r.Servers) > 0 && !slices.ContainsFunc(r.Servers, func(p string) bool { return glob(p, a.Server) }) {
		return false
	}
	if len(r.Effect) > 0 && !slices.Contains(r.Effect, at.effect) {
		return false
	}
	if len(r.Data) > 0 && !slices.Contains(r.Data, at.class) {
		return false
	}
	if r.Network != nil && *r.Network != at.network {
		return false
	}
	if r.Hints != nil && !r.matchHints(a.Hints) {
		return false
	}
	n := at.need
	switch {
	case len(r.paths) > 0:
		if n.Path == "" || (n.Kind != KindRead && n.Kind != KindWrite && n.Kind != KindSensitiveRead) {
			return false
		}
		return slices.ContainsFunc(r.paths, func(g PathGlob) bool { return g.Match(n.Path) })
	case len(r.domains) > 0:
		if n.Kind != KindNetwork {
			return false
		}
		return slices.ContainsFunc(r.domains, func(d DomainPattern) bool { return d.Match(n.Host, n.Port) })
	case len(r.commands) > 0:
		if n.Kind != KindExec || n.Command == nil {
			return false
		}
		mode := command.Must
		if r.Decision != Allow {
			mode = command.May
		}
		return slices.ContainsFunc(r.commands, func(p command.Pattern) bool { return p.Match(*n.Command, mode) })
	}
	return true
}

// matchHints: trusted hints match as given. A server's hints never make an allow
// rule match; for ask and deny rules a condition on the dangerous value matches
// whatever the server claims, one on the safe value only if it claims it.
func (r *rule) matchHints(h Hints) bool {
	for i, cond := range r.Hints.conds() {
		if cond == nil {
			continue
		}
		hl := hintList[i]
		switch {
		case h.Trusted:
			if hl.value(h) != *cond {
				return false
			}
		case r.Decision == Allow:
			return false
		case *cond == hl.unsafe:
		default:
			if hl.value(h) != *cond {
				return false
			}
		}
	}
	return true
}
