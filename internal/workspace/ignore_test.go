package workspace

import "testing"

func TestIgnorePatterns(t *testing.T) {
	for _, tc := range []struct {
		gitignore, base, path string
		dir, want             bool
	}{
		{"*.pyc", "", "a/b/c.pyc", false, true},
		{"/build", "", "x/build", true, false},
		{"/build", "", "build", true, true},
		{"build/", "", "build", false, false}, // directories only
		{"doc/*.txt", "", "doc/a.txt", false, true},
		{"doc/*.txt", "", "doc/x/a.txt", false, false}, // * does not cross a slash
		{"a/**/b", "", "a/x/y/b", false, true},
		{"gen/**", "", "gen", false, false}, // what is inside gen, not gen (found by TestIgnorePropertyMatchesGit)
		{"gen/**", "", "gen/x/y", false, true},
		{"*.log\n!keep.log", "", "keep.log", false, false},
		{"out", "sub", "sub/x/out", false, true},
		{"out", "sub", "other/out", false, false}, // a .gitignore rules below its directory only
		{"{a,b}", "", "a", false, false},          // braces are literal to git
		{"{a,b}", "", "{a,b}", false, true},
		{`\#x`, "", "#x", false, true},
		{"# comment", "", "# comment", false, false},
		{"x   ", "", "x", false, true},
		{"[", "", "[", false, false}, // invalid: matches nothing, as in git
		{"   \n*.x", "", "a.x", false, true},
	} {
		pats := parseIgnore(tc.base, []byte(tc.gitignore))
		if got := ignored(pats, tc.path, tc.dir); got != tc.want {
			t.Errorf("%q in %q, %s (dir %v): ignored %v, want %v", tc.gitignore, tc.base, tc.path, tc.dir, got, tc.want)
		}
	}
}

// The sandbox writes .gitignore files: parsing and matching them never panics (a
// line of spaces did, which would have crashed the daemon's diff).
func FuzzIgnore(f *testing.F) {
	for _, s := range []string{"*.pyc\n!a.pyc\n/build/\n", "a/**/b\n\\!x\n[a-\n{\n", "**\n!**/\n", "\\\n \n/\n!"} {
		f.Add(s, "a/b.pyc")
	}
	f.Fuzz(func(t *testing.T, gitignore, p string) {
		pats := parseIgnore("a", []byte(gitignore))
		for _, pt := range pats {
			if pt.glob == "" || pt.base != "a" {
				t.Fatalf("pattern %+v from %q", pt, gitignore)
			}
		}
		ignored(pats, p, false)
		ignored(pats, "a/"+p, true)
	})
}
