package grant

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/policy"
)

// Grant is one thing a person allowed.
type Grant struct {
	ID string `json:"id"`
	// Capability is what a session grant covers; Exact, set instead for a
	// one-time grant, is the one need (Need.String) it covers, for Call only.
	Capability string `json:"capability,omitempty"`
	Exact      string `json:"exact,omitempty"`
	Call       string `json:"call,omitempty"`
	// Revision is the goal revision the grant was given under.
	Revision int       `json:"goal_revision"`
	By       string    `json:"by"`                // "user", "approvals", "inherited:<session>"
	Request  string    `json:"request,omitempty"` // the approval request it answered
	At       time.Time `json:"at"`

	cap policy.Capability
}

// Once reports whether the grant is for one call.
func (g Grant) Once() bool { return g.Call != "" }

func (g Grant) covers(n policy.Need, call string) bool {
	if g.Call != "" {
		return g.Call == call && g.Exact == n.String()
	}
	return g.cap.Covers(n)
}

// Options configure a Set.
type Options struct {
	// Clock stamps grants; default time.Now.
	Clock func() time.Time
	// Prefix begins grant ids ("g-"); a child's set gets its own.
	Prefix string
}

// Set is one session's grants. It is safe for concurrent use.
type Set struct {
	o    Options
	mu   sync.Mutex
	goal Goal
	next int
	list []Grant
}

// NewSet returns a session's empty set at goal revision 0.
func NewSet(o Options) *Set {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Prefix == "" {
		o.Prefix = "g-"
	}
	return &Set{o: o}
}

// Give grants a capability for the session, at the current goal revision.
func (s *Set) Give(capability, by, request string) (Grant, error) {
	c, err := policy.ParseCapability(capability)
	if err != nil {
		return Grant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := Grant{Capability: c.String(), Revision: s.goal.Revision, By: by, Request: request, At: s.o.Clock(), cap: c}
	return s.addLocked(g), nil
}

// GiveOnce grants one need for one call.
func (s *Set) GiveOnce(n policy.Need, call, by, request string) Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(Grant{Exact: n.String(), Call: call, Revision: s.goal.Revision, By: by, Request: request, At: s.o.Clock()})
}

func (s *Set) addLocked(g Grant) Grant {
	s.next++
	g.ID = fmt.Sprintf("%s%d", s.o.Prefix, s.next)
	s.list = append(s.list, g)
	return g
}

// Restore puts back grants a session held before its driver died (the
// journal's fold of ApprovalResolved), keeping their ids; later grants are
// numbered after them.
func (s *Set) Restore(gs []Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range gs {
		if !g.Once() {
			c, err := policy.ParseCapability(g.Capability)
			if err != nil {
				return fmt.Errorf("restore grant %s: %w", g.ID, err)
			}
			g.cap = c
		}
		s.list = append(s.list, g)
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(g.ID, s.o.Prefix), "%d", &n); err == nil && n > s.next {
			s.next = n
		}
	}
	return nil
}

// Cover implements policy.Grants: the first grant that covers the need, a
// one-time grant for this call before a session grant.
func (s *Set) Cover(n policy.Need, call string) (policy.GrantRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, once := range []bool{true, false} {
		for _, g := range s.list {
			if g.Once() == once && g.covers(n, call) {
				return policy.GrantRef{ID: g.ID, Once: once}, true
			}
		}
	}
	return policy.GrantRef{}, false
}

// Spend removes the one-time grants a call used, once it runs.
func (s *Set) Spend(used []policy.GrantRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = slices.DeleteFunc(s.list, func(g Grant) bool {
		return g.Once() && slices.ContainsFunc(used, func(r policy.GrantRef) bool { return r.ID == g.ID })
	})
}

// Revoke removes a grant; it reports whether there was one.
func (s *Set) Revoke(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.list)
	s.list = slices.DeleteFunc(s.list, func(g Grant) bool { return g.ID == id })
	return len(s.list) < n
}

// List returns the grants held, oldest first.
func (s *Set) List() []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// Goal returns the current goal revision.
func (s *Set) Goal() Goal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goal
}

// SetGoal puts back the goal revision a session had before its driver died
// (the journal's fold of GoalRevised) and drops what no longer fits it: the
// grants a resumed driver gave again at revision 0 (--grant) after a
// correction. Its approvals' grants are restored with Restore.
func (s *Set) SetGoal(g Goal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.goal = g
	s.list = slices.DeleteFunc(s.list, func(x Grant) bool { return !g.Fits(x.Revision) })
}

// Steer records a change of the goal and drops the grants that no longer fit,
// returning them.
func (s *Set) Steer(k Steer) (Goal, []Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.goal.Steer(k)
	if err != nil {
		return s.goal, nil, err
	}
	s.goal = g
	var dropped []Grant
	s.list = slices.DeleteFunc(s.list, func(x Grant) bool {
		if g.Fits(x.Revision) {
			return false
		}
		dropped = append(dropped, x)
		return true
	})
	return g, dropped, nil
}

// Fork returns the set of a child session (a subagent, a delegated task) named
// child: the parent's session grants that fit its goal, marked inherited. One-time
// grants stay with the parent's calls.
func (s *Set) Fork(child string) *Set {
	c := NewSet(Options{Clock: s.o.Clock, Prefix: s.o.Prefix + child + "-"})
	for _, g := range s.List() {
		if g.Once() || !s.Goal().Fits(g.Revision) {
			continue
		}
		g.By = "inherited:" + g.ID
		g.Revision = 0
		c.list = append(c.list, g)
	}
	c.next = len(c.list)
	for i := range c.list {
		c.list[i].ID = fmt.Sprintf("%s%d", c.o.Prefix, i+1)
	}
	return c
}
