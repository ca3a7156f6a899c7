package grant

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/policy"
	"go.yaml.in/yaml/v3"
)

// Approvals pre-answer requests for a run without a person:
//
//	version: 1
//	approvals:
//	  - allow: write:src/**
//	  - allow: exec:go test **
//	  - deny: network:*
//	  - allow: release:secret@collector.example   # once per call, every time
//	unanswered: stop        # or deny; default the run's (agent: stop, eval: deny)
type Approvals struct {
	entries []approval
	// Unanswered is the file's unanswered: field; "" when it has none, leaving
	// the choice to the run.
	Unanswered Unanswered
}

type approval struct {
	allow bool
	cap   policy.Capability
}

// Unanswered is what happens to a request no entry answers.
type Unanswered string

const (
	// Stop ends the session with policy_stop, naming the request.
	Stop Unanswered = "stop"
	// Refuse refuses the call; the model sees the refusal and the session goes on.
	Refuse Unanswered = "deny"
)

type approvalsFile struct {
	Version    int                 `yaml:"version"`
	Approvals  []map[string]string `yaml:"approvals"`
	Unanswered string              `yaml:"unanswered"`
}

// ParseApprovals reads an approvals file, strictly.
func ParseApprovals(b []byte) (*Approvals, error) {
	var f approvalsFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	switch {
	case f.Version == 0:
		return nil, errors.New("approvals: missing version; the file begins with version: 1")
	case f.Version != 1:
		return nil, fmt.Errorf("approvals: version %d is not one this agentbox reads (it reads 1)", f.Version)
	}
	a := &Approvals{}
	switch f.Unanswered {
	case "":
	case "stop":
		a.Unanswered = Stop
	case "deny":
		a.Unanswered = Refuse
	default:
		return nil, fmt.Errorf("approvals: unanswered: %q; want stop or deny", f.Unanswered)
	}
	for i, e := range f.Approvals {
		if len(e) != 1 {
			return nil, fmt.Errorf("approvals[%d]: want one of allow: CAPABILITY or deny: CAPABILITY", i)
		}
		for k, v := range e {
			if k != "allow" && k != "deny" {
				return nil, fmt.Errorf("approvals[%d]: %q; want allow or deny", i, k)
			}
			c, err := policy.ParseCapability(v)
			if err != nil {
				return nil, fmt.Errorf("approvals[%d]: %w", i, err)
			}
			a.entries = append(a.entries, approval{allow: k == "allow", cap: c})
		}
	}
	return a, nil
}

// Upfront returns the capabilities the file allows that no request asks for, to
// be granted when the session starts: sensitive:read, which the built-in policy
// refuses unless granted rather than asks (a grantable deny).
func (a *Approvals) Upfront() []string {
	var out []string
	for _, e := range a.entries {
		if e.allow && e.cap.Kind == policy.KindSensitiveRead {
			out = append(out, e.cap.String())
		}
	}
	return out
}

// Answer answers a request from the file: an item is denied if a deny entry
// covers its need, else allowed if an allow entry does (granting that entry's
// capability for the session, or the need once for a one-time item). It reports
// false if some item is answered by no entry: the request is unanswered.
func (a *Approvals) Answer(r Request) (Answer, bool) {
	ans := Answer{Request: r.ID, By: "approvals", Grant: make([]string, len(r.Items))}
	for i, it := range r.Items {
		d := policy.Decision("")
		for _, e := range a.entries {
			if !e.cap.Covers(it.Need) {
				continue
			}
			if !e.allow {
				d = policy.Deny
				break
			}
			if d == "" {
				d = policy.Allow
				ans.Grant[i] = e.cap.String()
			}
		}
		if d == "" {
			return Answer{}, false
		}
		if d == policy.Deny || it.Once {
			ans.Grant[i] = ""
		}
		ans.Decisions = append(ans.Decisions, d)
	}
	return ans, true
}
