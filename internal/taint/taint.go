// Package taint tracks what sensitive data a session has seen. A session is tainted
// by a tool result read through the sensitive:read capability (a .env file, a key)
// or by any result whose content has a secret's shape (secret.Scan); each Label
// names the class of the data and where it came from. Taint only grows: nothing a
// session does, and nothing a person grants, removes a label. A person's one-time
// release lets one outgoing call through (package policy decides that); the session
// stays tainted.
//
// Delegation cannot launder taint: Fork gives a subagent or delegated task its
// parent's labels, and Merge gives the parent every label the child gathered, since
// the child's answer may carry what it read.
//
// It deliberately does not decide anything (package policy turns a tainted
// session's outgoing actions into release requests) or look at what is sent: the
// egress proxy scans outgoing payloads with secret.Scan on its own.
package taint

import (
	"slices"
	"sync"

	"github.com/agentbox/agentbox/internal/secret"
)

// Label is one reason a session is tainted.
type Label struct {
	Class  secret.Class `json:"class"`
	Source string       `json:"source"` // where the data came from: "file:.env", "exec: cat .env"
	// Rule is why the data is sensitive: "sensitive:read", or the secret.Scan rule
	// that matched ("aws-access-key-id").
	Rule string `json:"rule"`
	Call string `json:"call,omitempty"` // the tool call whose result carried it
	// Via names the sessions the label came through, when inherited or merged.
	Via []string `json:"via,omitempty"`
}

func (l Label) key() [3]string { return [3]string{string(l.Class), l.Source, l.Rule} }

// Observation is a tool result as taint sees it.
type Observation struct {
	Call    string
	Source  string // provenance of the content
	Content string
	// Sensitive is set when the call was allowed by the sensitive:read capability;
	// Class is then the class of what it read (secret.ClassOf of the path).
	Sensitive bool
	Class     secret.Class
}

// State is one session's taint. The zero value is an untainted session; it is safe
// for concurrent use.
type State struct {
	mu     sync.Mutex
	labels []Label
}

// Observe adds the labels a tool result brings and returns them (nil if none).
func (s *State) Observe(o Observation) []Label {
	var add []Label
	if o.Sensitive {
		c := secret.Max(o.Class, secret.Secret)
		add = append(add, Label{Class: c, Source: o.Source, Rule: "sensitive:read", Call: o.Call})
	}
	for _, f := range secret.Scan(o.Content) {
		add = append(add, Label{Class: f.Class, Source: o.Source, Rule: f.Rule, Call: o.Call})
	}
	var added []Label
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range add {
		if s.addLocked(l) {
			added = append(added, l)
		}
	}
	return added
}

// Add adds a label; it reports false if an equal one (class, source, rule) is
// already there.
func (s *State) Add(l Label) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(l)
}

func (s *State) addLocked(l Label) bool {
	if l.Class.Rank() < secret.Secret.Rank() {
		return false // project and public data taint nothing
	}
	for _, x := range s.labels {
		if x.key() == l.key() {
			return false
		}
	}
	s.labels = append(s.labels, l)
	return true
}

// Labels returns the labels in the order they were added.
func (s *State) Labels() []Label {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.labels)
}

// Tainted reports whether the session has seen sensitive data.
func (s *State) Tainted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.labels) > 0
}

// Classes returns the distinct classes of the labels, least sensitive first.
func (s *State) Classes() []secret.Class {
	return ClassesOf(s.Labels())
}

// ClassesOf returns the distinct classes of labels, least sensitive first.
func ClassesOf(ls []Label) []secret.Class {
	var out []secret.Class
	for _, c := range secret.Classes {
		if slices.ContainsFunc(ls, func(l Label) bool { return l.Class == c }) {
			out = append(out, c)
		}
	}
	return out
}

// Fork returns the taint of a child session (a subagent, a delegated task) named
// child: every label of s, marked as inherited.
func (s *State) Fork(child string) *State {
	c := &State{}
	for _, l := range s.Labels() {
		l.Via = append(slices.Clone(l.Via), child)
		c.labels = append(c.labels, l)
	}
	return c
}

// Merge adds the labels of a finished child session named child to s.
func (s *State) Merge(child string, c *State) {
	for _, l := range c.Labels() {
		if !slices.Contains(l.Via, child) {
			l.Via = append(slices.Clone(l.Via), child)
		}
		s.Add(l)
	}
}
