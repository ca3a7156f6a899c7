package grant

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/secret"
)

func TestParseApprovalsErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"approvals: []", "missing version"},
		{"version: 3", "version 3"},
		{"version: 1\napprovals:\n- allow: writ:src/**", "approvals[0]"},
		{"version: 1\napprovals:\n- permit: write:src/**", `"permit"`},
		{"version: 1\napprovals:\n- {allow: 'write:a', deny: 'write:b'}", "approvals[0]"},
		{"version: 1\nunanswered: allow", "unanswered"},
		{"version: 1\nextra: 1", "extra"},
	} {
		_, err := ParseApprovals([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.file, err, c.want)
		}
	}
}

func TestApprovalsAnswer(t *testing.T) {
	a, err := ParseApprovals([]byte(`version: 1
approvals:
  - allow: write:src/**
  - allow: network:*
  - deny: network:*.evil.example
  - allow: exec:git push **
  - deny: release:credential@*
  - allow: release:secret@collector.example
`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Unanswered != "" {
		t.Fatalf("a file without unanswered: says %q; want \"\" (the run's default)", a.Unanswered)
	}
	for _, c := range []struct {
		name string
		it   Item
		want policy.Decision // "" unanswered
		cap  string
	}{
		{"write granted by its entry", Item{Need: write("src/a.go"), Capability: "write:src/**"}, policy.Allow, "write:src/**"},
		{"write elsewhere", Item{Need: write("README"), Capability: "write:README"}, "", ""},
		{"deny wins over allow", Item{Need: policy.Need{Kind: policy.KindNetwork, Host: "x.evil.example"}}, policy.Deny, ""},
		{"network", Item{Need: policy.Need{Kind: policy.KindNetwork, Host: "docs.example"}}, policy.Allow, "network:*"},
		{"push, every time", Item{Need: execNeed("git push"), Once: true}, policy.Allow, ""},
		{"credential release", Item{Need: policy.Need{Kind: policy.KindRelease, Class: secret.Credential, Host: "collector.example"}, Once: true}, policy.Deny, ""},
		{"secret release", Item{Need: policy.Need{Kind: policy.KindRelease, Class: secret.Secret, Host: "collector.example"}, Once: true}, policy.Allow, ""},
		{"secret release elsewhere", Item{Need: policy.Need{Kind: policy.KindRelease, Class: secret.Secret, Host: "other.example"}, Once: true}, "", ""},
	} {
		ans, ok := a.Answer(Request{ID: "r", Items: []Item{c.it}})
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: answered %+v", c.name, ans)
		case c.want != "" && (!ok || ans.Decisions[0] != c.want || ans.Grant[0] != c.cap):
			t.Errorf("%s: %+v %v, want %s %q", c.name, ans, ok, c.want, c.cap)
		}
	}
	// A request is answered only if every item is.
	if _, ok := a.Answer(Request{ID: "r", Items: []Item{{Need: write("src/a")}, {Need: write("README")}}}); ok {
		t.Error("a request with an unanswered item was answered")
	}
}
