package grant

import (
	"fmt"

	"github.com/agentbox/agentbox/internal/policy"
)

// ScopeSuggested, as a reply's scope, grants each item its suggestion
// (Item.Capability) for the session.
const ScopeSuggested = "suggested"

// Reply is a person's answer to a whole request (agentbox sessions approve|deny):
// allow or refuse every item. An approval with no scope allows each item for its
// call only; with a capability as scope it grants that capability for the
// session (it must cover every item that is not asked every time); with
// ScopeSuggested it grants each item's suggestion. Items asked every time are
// allowed once whatever the scope. It checks the answer against the request
// (Resolve on a scratch set), so a bad scope is refused before it is stored.
func Reply(r Request, allow bool, scope, by string) (Answer, error) {
	a := Answer{Request: r.ID, By: by}
	d := policy.Deny
	if allow {
		d = policy.Allow
	}
	for range r.Items {
		a.Decisions = append(a.Decisions, d)
	}
	switch {
	case !allow && scope != "":
		return Answer{}, fmt.Errorf("a refusal takes no scope (--scope %q)", scope)
	case !allow, scope == ScopeSuggested:
	case scope == "":
		a.Once = true
	default:
		c, err := policy.ParseCapability(scope)
		if err != nil {
			return Answer{}, fmt.Errorf("scope: %w", err)
		}
		a.Grant = make([]string, len(r.Items))
		for i, it := range r.Items {
			if !it.Once {
				a.Grant[i] = c.String()
			}
		}
	}
	scratch := NewSet(Options{})
	scratch.goal = Goal{Revision: r.Revision, Epoch: r.Revision}
	if _, err := scratch.Resolve(r, a); err != nil {
		return Answer{}, err
	}
	return a, nil
}
