package grant

import (
	"fmt"
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/taint"
)

// Item is one need a person is asked to approve.
type Item struct {
	Call string      `json:"call"`
	Tool string      `json:"tool"`
	Need policy.Need `json:"need"`
	// Capability is what approving the item grants for the session ("" for a
	// one-time item, which grants its need for its call only).
	Capability string        `json:"capability,omitempty"`
	Once       bool          `json:"once,omitempty"`
	Rule       string        `json:"rule"`
	Risk       policy.Risk   `json:"risk"`
	Why        string        `json:"why"`
	Taint      []taint.Label `json:"taint,omitempty"`
	Show       []string      `json:"show,omitempty"`
}

// Request is what ApprovalRequested carries: one or more items, answered
// together.
type Request struct {
	ID       string `json:"id"`
	Items    []Item `json:"items"`
	Revision int    `json:"goal_revision"`
}

// Items returns a verdict's asks as items.
func Items(call, tool string, v policy.Verdict) []Item {
	var out []Item
	for _, j := range v.Asks() {
		it := Item{Call: call, Tool: tool, Need: j.Need, Once: j.EveryTime, Rule: j.Rule, Risk: j.Risk, Why: j.Why,
			Taint: j.Taint, Show: j.Show}
		if !it.Once {
			it.Capability = Suggest(j.Need)
		}
		out = append(out, it)
	}
	return out
}

// Suggest returns the capability to grant for a need: wide enough that the next
// similar call is not asked again, no wider than a person reading it would expect.
//
//	write:src/app/main.go   → write:src/app/**
//	exec:go test ./pkg -run X → exec:go test **
//	network:host:443        → network:host:443
//	sensitive:read:.env     → sensitive:read:.env (never widened)
//	tool:gh.create_issue    → tool:gh.create_issue
func Suggest(n policy.Need) string {
	switch n.Kind {
	case policy.KindRead, policy.KindWrite:
		d := path.Dir(n.Path)
		if d == "." {
			return string(n.Kind) + ":" + n.Path
		}
		return string(n.Kind) + ":" + d + "/**"
	case policy.KindExec:
		if n.Command == nil || n.Command.Opaque != "" {
			return "exec:**"
		}
		return "exec:" + programPattern(*n.Command)
	}
	return n.String()
}

// programPattern keeps the program and its first literal operand that looks like
// a subcommand (go test, npm install, git commit), and allows any arguments after.
func programPattern(s command.Simple) string {
	words := []string{quote(s.Name())}
	if len(s.Argv) > 1 {
		w := s.Argv[1]
		if w.Kind == command.Literal && w.Text != "" && !strings.HasPrefix(w.Text, "-") && !strings.ContainsAny(w.Text, "/.=*?") {
			words = append(words, quote(w.Text))
		}
	}
	return strings.Join(append(words, "**"), " ")
}

func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"'\\") {
		return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
	}
	return s
}

// LowRisk is the risk score below which consecutive asks are presented together.
const LowRisk = 60

// Group turns pending items, in the order they were asked, into requests: the
// items of one call are one request (one action, one question), and a run of
// consecutive calls whose items are all low-risk (not one-time, scoring below
// LowRisk) is one request too. ids names each request.
func Group(items []Item, revision int, ids func() string) []Request {
	var out []Request
	low := func(it Item) bool { return !it.Once && it.Risk.Score < LowRisk }
	openLow := false // the last request holds only low-risk items
	for i, it := range items {
		sameCall := i > 0 && items[i-1].Call == it.Call
		switch {
		case sameCall:
			last := &out[len(out)-1]
			last.Items = append(last.Items, it)
			openLow = openLow && low(it)
		case openLow && low(it):
			last := &out[len(out)-1]
			last.Items = append(last.Items, it)
		default:
			out = append(out, Request{ID: ids(), Items: []Item{it}, Revision: revision})
			openLow = low(it)
		}
	}
	return out
}

// Answer is a person's (or an approvals file's) answer to a request: a decision
// per item, in the request's order, and optionally the capability to grant
// instead of the item's suggestion (narrower, or wider). Once allows each
// allowed item for its call only, granting nothing for the session.
type Answer struct {
	Request   string            `json:"request"`
	Decisions []policy.Decision `json:"decisions"`
	Grant     []string          `json:"grant,omitempty"`
	Once      bool              `json:"once,omitempty"`
	By        string            `json:"by"`
}

// AllowAll answers every item of a request with allow.
func AllowAll(r Request, by string) Answer {
	a := Answer{Request: r.ID, By: by}
	for range r.Items {
		a.Decisions = append(a.Decisions, policy.Allow)
	}
	return a
}

// Resolve records an answer: a session grant for each allowed item (its
// suggestion, or the answer's capability), a one-time grant for each allowed
// one-time item, and for each item of a one-time answer the answer gives no
// capability for. It refuses an answer to a request of an earlier goal (its
// grants would not fit), or one whose shape does not match.
func (s *Set) Resolve(r Request, a Answer) ([]Grant, error) {
	if a.Request != r.ID {
		return nil, fmt.Errorf("answer to %s given for %s", a.Request, r.ID)
	}
	if len(a.Decisions) != len(r.Items) {
		return nil, fmt.Errorf("request %s has %d items; the answer decides %d", r.ID, len(r.Items), len(a.Decisions))
	}
	if a.Grant != nil && len(a.Grant) != len(r.Items) {
		return nil, fmt.Errorf("request %s has %d items; the answer grants %d", r.ID, len(r.Items), len(a.Grant))
	}
	if g := s.Goal(); !g.Fits(r.Revision) {
		return nil, fmt.Errorf("request %s was made for goal revision %d; the goal has changed since (revision %d)", r.ID, r.Revision, g.Revision)
	}
	var out []Grant
	for i, it := range r.Items {
		if a.Decisions[i] != policy.Allow {
			continue
		}
		if it.Once || (a.Once && (a.Grant == nil || a.Grant[i] == "")) {
			out = append(out, s.GiveOnce(it.Need, it.Call, a.By, r.ID))
			continue
		}
		c := it.Capability
		if a.Grant != nil && a.Grant[i] != "" {
			c = a.Grant[i]
		}
		g, err := s.Give(c, a.By, r.ID)
		if err != nil {
			return out, fmt.Errorf("request %s item %d: %w", r.ID, i+1, err)
		}
		if !g.cap.Covers(it.Need) {
			s.Revoke(g.ID)
			return out, fmt.Errorf("request %s item %d: %s does not cover %s", r.ID, i+1, c, it.Need)
		}
		out = append(out, g)
	}
	return out, nil
}
