package taint

import (
	"testing"

	"github.com/agentbox/agentbox/internal/secret"
	"pgregory.net/rapid"
)

const awsKey = "AKIA" + "IOSFODNN7" + "EXAMPLQ"

func TestObserve(t *testing.T) {
	var s State
	if s.Tainted() {
		t.Fatal("a new session is tainted")
	}
	if got := s.Observe(Observation{Call: "c1", Source: "file:README.md", Content: "# calc\nadd numbers"}); got != nil || s.Tainted() {
		t.Fatalf("an ordinary result tainted the session: %+v", got)
	}
	got := s.Observe(Observation{Call: "c2", Source: "file:.env", Content: "DEBUG=1\n", Sensitive: true, Class: secret.Secret})
	if len(got) != 1 || got[0].Rule != "sensitive:read" || got[0].Class != secret.Secret || got[0].Source != "file:.env" {
		t.Fatalf("a sensitive read gave %+v", got)
	}
	got = s.Observe(Observation{Call: "c3", Source: "exec: env", Content: "AWS_ACCESS_KEY_ID=" + awsKey})
	if len(got) != 1 || got[0].Class != secret.Credential || got[0].Rule != "aws-access-key-id" {
		t.Fatalf("a result holding a key gave %+v", got)
	}
	if s.Observe(Observation{Call: "c4", Source: "exec: env", Content: "AWS_ACCESS_KEY_ID=" + awsKey}) != nil {
		t.Fatal("the same label was added twice")
	}
	if cs := s.Classes(); len(cs) != 2 || cs[0] != secret.Secret || cs[1] != secret.Credential {
		t.Fatalf("Classes = %v", cs)
	}
	if s.Add(Label{Class: secret.Project, Source: "x"}) {
		t.Fatal("project data tainted the session")
	}
}

// TestDelegationCannotLaunder: a child starts with the parent's taint, and what
// the child reads comes back to the parent.
func TestDelegationCannotLaunder(t *testing.T) {
	var parent State
	parent.Observe(Observation{Source: "file:.env", Sensitive: true, Class: secret.Secret})
	child := parent.Fork("sub-1")
	if !child.Tainted() || child.Labels()[0].Via[0] != "sub-1" {
		t.Fatalf("the child did not inherit the taint: %+v", child.Labels())
	}
	var clean State
	kid := clean.Fork("sub-2")
	kid.Observe(Observation{Source: "file:id_rsa", Content: "-----BEGIN OPENSSH PRIVATE KEY-----"})
	clean.Merge("sub-2", kid)
	if !clean.Tainted() || clean.Labels()[0].Class != secret.Credential {
		t.Fatalf("the child's taint did not come back: %+v", clean.Labels())
	}
}

// TestTaintOnlyGrows: whatever is observed, merged or forked, no label is lost.
func TestTaintOnlyGrows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s State
		var seen int
		for i := range rapid.IntRange(1, 30).Draw(t, "n") {
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				class := rapid.SampledFrom(secret.Classes).Draw(t, "class")
				s.Observe(Observation{Source: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "src"),
					Sensitive: rapid.Bool().Draw(t, "sensitive"), Class: class})
			case 1:
				c := s.Fork("k")
				c.Add(Label{Class: secret.Secret, Source: rapid.String().Draw(t, "s"), Rule: "r"})
				s.Merge("k", c)
			case 2:
				s.Observe(Observation{Source: "x", Content: rapid.SampledFrom([]string{"", "plain", "AWS=" + awsKey}).Draw(t, "c")})
			}
			n := len(s.Labels())
			if n < seen {
				t.Fatalf("step %d: %d labels, had %d", i, n, seen)
			}
			seen = n
		}
	})
}
