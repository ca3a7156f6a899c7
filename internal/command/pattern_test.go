package command

import (
	"strings"
	"testing"
)

// TestDenyPatternBypasses is the attacker's test of an argv deny rule: every way
// of composing git push that Claude Code users found for string rules, and more.
// Each line must either be matched by "git push **" under May, or be opaque (so
// that the caller gives it an unknown command's risk instead of the rule's
// silence).
func TestDenyPatternBypasses(t *testing.T) {
	deny := MustParsePattern("git push **")
	for _, line := range []string{
		"git push",
		"/usr/bin/git push origin main",
		"git -C sub push",
		"git --no-pager push",
		"sh -c 'git push'",
		"bash -lc \"sh -c 'git push'\"",
		"busybox sh -c 'git push'",
		"env git push",
		"env -i FOO=1 git push",
		"env -S 'git push' origin",
		"nice -n 5 git push",
		"timeout -s KILL 10 git push",
		"sudo -u root git push",
		"nohup git push &",
		"time git push",
		"exec git push",
		"command git push",
		"echo main | xargs git push origin",
		"echo main | xargs -I{} git push {}",
		"ls | xargs -n1 sh -c 'git push'",
		"find . -maxdepth 0 -exec git push \\;",
		"true && git push",
		"false || git push",
		"(git push)",
		"{ git push; }",
		"if true; then git push; fi",
		"for i in 1; do git push; done",
		"while false; do :; done; git push",
		"echo $(git push)",
		"echo \"`git push`\"",
		"cat <(git push)",
		"x=$(git push)",
		"g\\it push",
		"'git' \"push\"",
		"gi''t pu\"\"sh",
		"git $SUB",
		"git \"$SUB\"",
		"git ${SUB:-push}",
		"git rebase -x 'git push' main",
		"FOO=bar git push",
		"GIT_SSH_COMMAND='sh -c x' git push",
		"PATH=/tmp git push",
		"$GIT push",
		"eval git push",
		"git -c core.sshCommand=x push",
		"f() { git push; }; f",
		"sh -c \"$CMD\"",
		"echo $'\\x67it push' | sh",
		"git $(echo push)",
	} {
		l := ParseShell(line)
		if !deny.MatchLine(l, May) && l.Opaque() == "" {
			t.Errorf("%q slips past %q: %s", line, "git push **", show(l))
		}
	}
	// What the rule cannot see: a script or program that runs git push itself.
	for _, line := range []string{"bash push.sh", "./push.sh", "make push", "python3 -c 'import os; os.system(\"git push\")'"} {
		if l := ParseShell(line); deny.MatchLine(l, May) || l.Opaque() != "" {
			t.Errorf("%q: the limit moved (matched or opaque); update the package doc: %s", line, show(l))
		}
	}
	// And the rule does not fire on what is not git push.
	for _, line := range []string{"git status", "git commit -m push", "echo git push", "git log -- push.go", "gitpush"} {
		if l := ParseShell(line); deny.MatchLine(l, May) || l.Opaque() != "" {
			t.Errorf("%q matched %q or was opaque: %s", line, "git push **", show(l))
		}
	}
}

func TestPatternMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, line string
		must, may     bool
	}{
		{"go test **", "go test ./...", true, true},
		{"go test **", "go test", true, true},
		{"go test **", "/usr/local/go/bin/go test -run X ./pkg", true, true},
		{"go test **", "go build ./...", false, false},
		{"go test **", "cd src && go test ./...", false, true},
		{"go test", "go test ./...", false, false},
		{"go test *", "go test ./...", true, true},
		{"go test *", "go test", false, false},
		{"go test *", "go test $PKG", false, true},
		{"go test *", `go test "$PKG"`, true, true},
		{"go test **", "go test $FLAGS", true, true},
		{"rm -rf *", "rm -rf build", true, true},
		{"rm -rf build/*", "rm -rf build/x/y", true, true},
		{"rm -rf build/*", "rm -rf src", false, false},
		{"rm -rf **", "rm -rf *", true, true},
		{"rm -rf *", "rm -rf *", false, true},
		{"rm -rf src", "rm -rf *", false, true},
		{"npm install", "npm install", true, true},
		{"npm install", "npm install left-pad", false, false},
		{"npm i*", "npm install", true, true},
		{"npm ?", "npm i", true, true},
		{"/usr/bin/git **", "git status", false, false},
		{"/usr/bin/git **", "/usr/bin/git status", true, true},
		{"*", "anything", true, true},
		{"* **", "anything at all", true, true},
		{"**", "eval anything", true, false},
		{"**", "ls", true, true},
		{"git push **", "git push $(id)", false, true},
		{"'my prog' x", "'my prog' x", true, true},
	} {
		p, err := ParsePattern(c.pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", c.pattern, err)
		}
		l := ParseShell(c.line)
		if got := p.MatchLine(l, Must); got != c.must {
			t.Errorf("%q Must %q = %v, want %v (%s)", c.pattern, c.line, got, c.must, show(l))
		}
		if got := p.MatchLine(l, May); got != c.may {
			t.Errorf("%q May %q = %v, want %v (%s)", c.pattern, c.line, got, c.may, show(l))
		}
	}
}

func TestParsePatternErrors(t *testing.T) {
	for _, s := range []string{"", "   ", "** rm", "'unterminated", `""`} {
		if _, err := ParsePattern(s); err == nil {
			t.Errorf("ParsePattern(%q) accepted", s)
		}
	}
	p := MustParsePattern(`git commit -m "a b"`)
	if q, err := ParsePattern(p.String()); err != nil || q.String() != p.String() {
		t.Errorf("String does not round-trip: %q -> %q (%v)", p.String(), q.String(), err)
	}
}

// FuzzParseShell checks the invariants the policy relies on for any line: every
// program is opaque or has a literal name, and parsing never panics.
func FuzzParseShell(f *testing.F) {
	for _, s := range []string{"git push", "sh -c 'a | b' && env -S 'x y' z", "find . -exec a {} \\;", "f(){ :; }", "$(a)$(b) <(c) `d`", "xargs -I{} sh -c 'e {}'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := ParseShell(s)
		for _, x := range l.Simple {
			if x.Opaque == "" && len(x.Argv) > 0 && x.Argv[0].Kind != Literal {
				t.Fatalf("%q: program %s is neither literal nor opaque", s, x.String())
			}
		}
		if l2 := Parse(strings.Fields(s)); len(l2.Simple) > 0 && l2.Simple[0].Opaque == "" && l2.Simple[0].Argv[0].Kind != Literal {
			t.Fatalf("%q: Parse gave a non-literal program", s)
		}
	})
}

func FuzzParsePattern(f *testing.F) {
	f.Add("go test **")
	f.Add(`a "b c" 'd'`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			return
		}
		q, err := ParsePattern(p.String())
		if err != nil || q.String() != p.String() {
			t.Fatalf("%q: String %q does not round-trip: %v", s, p.String(), err)
		}
		p.MatchLine(ParseShell(s), Must)
		p.MatchLine(ParseShell(s), May)
	})
}
