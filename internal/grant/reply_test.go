package grant

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/policy"
)

// TestReply: a person's whole-request answer. An approval without a scope is
// one-time; with a capability it grants it for the session, but never for an
// item asked every time; a scope that does not cover an item, a bad
// capability, or a refusal with a scope is refused before anything is stored.
func TestReply(t *testing.T) {
	write := Item{Call: "c1", Tool: "fs.write", Need: policy.Need{Kind: policy.KindWrite, Path: "src/a.go"}, Capability: "write:src/**"}
	release := Item{Call: "c1", Tool: "http.fetch", Need: policy.Need{Kind: policy.KindRelease, Class: "secret", Host: "x.example"}, Once: true}
	r := Request{ID: "req_1", Items: []Item{write, release}}
	for _, tc := range []struct {
		name  string
		allow bool
		scope string
		err   string
		caps  []string // the grants' capability, or "once:<need>"
	}{
		{"once", true, "", "", []string{"once:write:src/a.go", "once:" + release.Need.String()}},
		{"scope", true, "write:src/**", "", []string{"write:src/**", "once:" + release.Need.String()}},
		{"suggested", true, ScopeSuggested, "", []string{"write:src/**", "once:" + release.Need.String()}},
		{"narrow", true, "write:docs/**", "does not cover", nil},
		{"bad", true, "writ:src", "", nil},
		{"deny", false, "", "", nil},
		{"deny-scope", false, "write:**", "no scope", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Reply(r, tc.allow, tc.scope, "user")
			if tc.name == "bad" {
				if err == nil {
					t.Fatal("a bad capability was accepted")
				}
				return
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := NewSet(Options{})
			gs, err := s.Resolve(r, a)
			if err != nil {
				t.Fatal(err)
			}
			var caps []string
			for _, g := range gs {
				if g.Once() {
					caps = append(caps, "once:"+g.Exact)
				} else {
					caps = append(caps, g.Capability)
				}
			}
			if strings.Join(caps, " ") != strings.Join(tc.caps, " ") {
				t.Fatalf("grants %v, want %v", caps, tc.caps)
			}
		})
	}
}

// TestRestore: restored grants cover what they covered, keep their ids, and
// later grants are numbered after them.
func TestRestore(t *testing.T) {
	old := NewSet(Options{})
	g1, _ := old.Give("write:src/**", "user", "req_1")
	n := policy.Need{Kind: policy.KindWrite, Path: "src/a.go"}
	g2 := old.GiveOnce(n, "c7", "user", "req_2")
	s := NewSet(Options{})
	if err := s.Restore([]Grant{g1, g2}); err != nil {
		t.Fatal(err)
	}
	if ref, ok := s.Cover(n, "c8"); !ok || ref.ID != g1.ID {
		t.Fatalf("the restored session grant: %v %v", ref, ok)
	}
	if ref, ok := s.Cover(n, "c7"); !ok || ref.ID != g2.ID || !ref.Once {
		t.Fatalf("the restored one-time grant: %v %v", ref, ok)
	}
	if g, _ := s.Give("exec:go test **", "user", ""); g.ID != "g-3" {
		t.Fatalf("the next grant is %s, want g-3", g.ID)
	}
	if err := s.Restore([]Grant{{ID: "g-9", Capability: "nonsense"}}); err == nil {
		t.Fatal("a grant with a bad capability was restored")
	}
}
