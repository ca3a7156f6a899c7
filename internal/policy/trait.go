package policy

import "github.com/agentbox/agentbox/internal/command"

// trait is what the risk function knows of a kind of command: how far it reaches
// and how well it can be undone. The commands of each are those of a rule of the
// built-in policy, so that one list names them; a policy of one's own that has no
// such rule still gets their risk.
type trait struct {
	rule  string
	scope Scope
	rev   Reversibility
}

var traits = []trait{
	{"publish", ScopeExternal, Irreversible},
	{"rewrite-history", ScopeRepository, Recoverable},
	{"delete-many", ScopeTree, Recoverable},
}

// traitOf returns the first trait a program may have (command.May).
func traitOf(s command.Simple) (trait, bool) {
	d := Default()
	for _, t := range traits {
		for _, r := range d.rules {
			if r.Name != t.rule {
				continue
			}
			for _, p := range r.commands {
				if p.Match(s, command.May) {
					return t, true
				}
			}
		}
	}
	return trait{}, false
}
