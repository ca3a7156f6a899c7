package grant

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/secret"
	"pgregory.net/rapid"
)

func write(p string) policy.Need { return policy.Need{Kind: policy.KindWrite, Path: p} }

func execNeed(line string) policy.Need {
	s := command.ParseShell(line).Simple[0]
	return policy.Need{Kind: policy.KindExec, Command: &s}
}

func TestCoverAndSpend(t *testing.T) {
	s := NewSet(Options{})
	if _, err := s.Give("write:src/**", "user", "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Give("writ:src/**", "user", "r1"); err == nil {
		t.Fatal("a bad capability was granted")
	}
	if _, ok := s.Cover(write("src/a/b.go"), "c1"); !ok {
		t.Error("write:src/** does not cover src/a/b.go")
	}
	if _, ok := s.Cover(write("README"), "c1"); ok {
		t.Error("write:src/** covers README")
	}
	push := execNeed("git push origin main")
	g := s.GiveOnce(push, "c7", "user", "r2")
	if ref, ok := s.Cover(push, "c7"); !ok || !ref.Once || ref.ID != g.ID {
		t.Fatalf("the one-time grant does not cover its call: %+v %v", ref, ok)
	}
	if _, ok := s.Cover(push, "c8"); ok {
		t.Fatal("a one-time grant covers another call")
	}
	if _, ok := s.Cover(execNeed("git push origin other"), "c7"); ok {
		t.Fatal("a one-time grant covers another need of its call")
	}
	s.Spend([]policy.GrantRef{{ID: g.ID, Once: true}})
	if _, ok := s.Cover(push, "c7"); ok {
		t.Fatal("a spent one-time grant still covers")
	}
	if len(s.List()) != 1 {
		t.Fatalf("grants left: %+v", s.List())
	}
}

// TestGoalRevision: grants survive a supplement or an ask (which is no revision) and are dropped by a
// correction or a replacement of the goal.
func TestGoalRevision(t *testing.T) {
	s := NewSet(Options{})
	old, _ := s.Give("write:src/**", "user", "")
	for _, k := range []Steer{Supplement, Ask} {
		if _, dropped, err := s.Steer(k); err != nil || len(dropped) != 0 {
			t.Fatalf("%s dropped %v (%v)", k, dropped, err)
		}
	}
	if _, ok := s.Cover(write("src/x"), ""); !ok {
		t.Fatal("a supplement dropped the grant")
	}
	g, dropped, err := s.Steer(Correct)
	if err != nil || len(dropped) != 1 || dropped[0].ID != old.ID || g.Revision != 2 || g.Epoch != 2 {
		t.Fatalf("correct: goal %+v dropped %+v (%v)", g, dropped, err)
	}
	if _, ok := s.Cover(write("src/x"), ""); ok {
		t.Fatal("a correction kept a grant given for the old goal")
	}
	fresh, _ := s.Give("write:api/**", "user", "")
	if fresh.Revision != 2 {
		t.Fatalf("a new grant records revision %d", fresh.Revision)
	}
	s.Steer(Supplement)
	if _, ok := s.Cover(write("api/x"), ""); !ok {
		t.Fatal("a grant of the current goal was dropped by a supplement")
	}
	if _, dropped, _ := s.Steer(Replace); len(dropped) != 1 {
		t.Fatalf("replace dropped %v", dropped)
	}
	if _, _, err := s.Steer("rethink"); err == nil {
		t.Fatal("an unknown steer was accepted")
	}
	// An answer to a request made before the correction does not grant.
	req := Request{ID: "r1", Revision: 0, Items: []Item{{Need: write("src/a"), Capability: "write:src/**"}}}
	if _, err := s.Resolve(req, AllowAll(req, "user")); err == nil {
		t.Fatal("a request of an earlier goal was resolved")
	}
}

// TestSetGoal: a set given grants at revision 0 and put back at a corrected
// goal holds none of them; at a supplemented goal it keeps them.
func TestSetGoal(t *testing.T) {
	s := NewSet(Options{})
	s.Give("tool:ledger.append", "operator", "")
	s.SetGoal(Goal{Revision: 1})
	if len(s.List()) != 1 {
		t.Fatalf("a supplemented goal dropped %v", s.List())
	}
	s.SetGoal(Goal{Revision: 2, Epoch: 2})
	if len(s.List()) != 0 || s.Goal() != (Goal{Revision: 2, Epoch: 2}) {
		t.Fatalf("a corrected goal holds %v at %+v", s.List(), s.Goal())
	}
}

// TestSteerProperty: after any sequence of steers and grants, every grant held
// fits the goal.
func TestSteerProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewSet(Options{})
		for range rapid.IntRange(1, 20).Draw(t, "n") {
			if rapid.Bool().Draw(t, "give") {
				s.Give("write:src/**", "user", "")
			} else {
				s.Steer(rapid.SampledFrom([]Steer{Supplement, Ask, Correct, Replace}).Draw(t, "kind"))
			}
			for _, g := range s.List() {
				if !s.Goal().Fits(g.Revision) {
					t.Fatalf("grant %+v held at goal %+v", g, s.Goal())
				}
			}
		}
	})
}

func TestSuggest(t *testing.T) {
	for need, want := range map[string]policy.Need{
		"write:src/app/**":                 write("src/app/main.go"),
		"write:README.md":                  write("README.md"),
		"exec:go test **":                  execNeed("go test ./pkg -run X"),
		"exec:npm install **":              execNeed("npm install left-pad"),
		"exec:pytest **":                   execNeed("pytest -q tests/"),
		"exec:**":                          execNeed("eval x"),
		"network:registry.npmjs.org:443":   {Kind: policy.KindNetwork, Host: "registry.npmjs.org", Port: 443},
		"sensitive:read:.env":              {Kind: policy.KindSensitiveRead, Path: ".env"},
		"tool:gh.create_issue":             {Kind: policy.KindTool, Tool: "gh.create_issue"},
		"release:secret@collector.example": {Kind: policy.KindRelease, Class: secret.Secret, Host: "collector.example"},
	} {
		got := Suggest(want)
		if got != need {
			t.Errorf("Suggest(%s) = %s, want %s", want, got, need)
		}
		c, err := policy.ParseCapability(got)
		if err != nil || !c.Covers(want) {
			t.Errorf("the suggestion %s does not cover %s (%v)", got, want, err)
		}
	}
}

func TestGroup(t *testing.T) {
	item := func(name string, score int, once bool) Item {
		return Item{Call: name, Once: once, Risk: policy.Risk{Score: score}}
	}
	items := []Item{item("a", 40, false), item("b", 45, false), item("push", 73, true), item("c", 40, false),
		item("d", 70, false), item("e", 40, false), item("f", 50, false), item("post", 60, true), item("post", 90, true), item("g", 10, false)}
	n := 0
	reqs := Group(items, 2, func() string { n++; return fmt.Sprintf("r%d", n) })
	var got []string
	for _, r := range reqs {
		var calls []string
		for _, it := range r.Items {
			calls = append(calls, it.Call)
		}
		got = append(got, strings.Join(calls, "+"))
		if r.Revision != 2 {
			t.Errorf("request %s has revision %d", r.ID, r.Revision)
		}
	}
	if strings.Join(got, " ") != "a+b push c d e+f post+post g" {
		t.Fatalf("grouped as %v", got)
	}
}

func TestResolve(t *testing.T) {
	s := NewSet(Options{})
	push := execNeed("git push")
	req := Request{ID: "r1", Items: []Item{
		{Call: "c1", Need: write("src/a.go"), Capability: "write:src/**"},
		{Call: "c1", Need: push, Once: true},
		{Call: "c1", Need: write("docs/x.md"), Capability: "write:docs/**"},
	}}
	gs, err := s.Resolve(req, Answer{Request: "r1", By: "user", Decisions: []policy.Decision{policy.Allow, policy.Allow, policy.Deny},
		Grant: []string{"write:src/a.go", "", ""}})
	if err != nil || len(gs) != 2 {
		t.Fatalf("%v %+v", err, gs)
	}
	if _, ok := s.Cover(write("src/b.go"), "c2"); ok {
		t.Error("the narrowed grant covers more than it names")
	}
	if ref, ok := s.Cover(push, "c1"); !ok || !ref.Once {
		t.Error("the one-time item was not granted once")
	}
	if _, ok := s.Cover(write("docs/x.md"), "c1"); ok {
		t.Error("a denied item was granted")
	}
	bad := Answer{Request: "r1", By: "user", Decisions: []policy.Decision{policy.Allow, policy.Deny, policy.Deny}, Grant: []string{"write:docs/**", "", ""}}
	if _, err := s.Resolve(req, bad); err == nil {
		t.Error("a grant that does not cover its item was accepted")
	}
	if _, err := s.Resolve(req, Answer{Request: "r2"}); err == nil {
		t.Error("an answer to another request was accepted")
	}
}

func TestFork(t *testing.T) {
	s := NewSet(Options{})
	s.Give("write:src/**", "user", "")
	s.GiveOnce(execNeed("git push"), "c1", "user", "")
	child := s.Fork("sub1")
	if _, ok := child.Cover(write("src/x"), "k1"); !ok {
		t.Fatal("the child did not inherit the session grant")
	}
	if _, ok := child.Cover(execNeed("git push"), "c1"); ok {
		t.Fatal("the child inherited a one-time grant of its parent's call")
	}
	child.Give("network:*", "user", "")
	if _, ok := s.Cover(policy.Need{Kind: policy.KindNetwork, Host: "x.example"}, ""); ok {
		t.Fatal("a grant to the child reached the parent")
	}
	if l := child.List(); !strings.HasPrefix(l[0].By, "inherited:") || !strings.HasPrefix(l[1].ID, "g-sub1-") {
		t.Fatalf("child grants: %+v", l)
	}
}
