package workspace

import (
	"bytes"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultIgnore are the patterns every diff leaves out unless
// DiffOptions.IncludeIgnored is set, beneath the tree's own .gitignore files (which
// may re-include them with "!"): what running a project's tests leaves behind and
// nobody means to submit.
var DefaultIgnore = []string{"__pycache__/", "*.pyc", ".pytest_cache/"}

// maxIgnoreFile bounds the .gitignore read in one directory; past it the file
// is not read (and its patterns do not apply).
const maxIgnoreFile = 1 << 20

// ignorePattern is one line of a .gitignore, with git's semantics
// (gitignore(5)): a pattern with a slash other than a trailing one is anchored to
// the directory of its file, one without matches a name at any depth below it; a
// trailing slash matches directories only; "!" re-includes; the last pattern that
// matches decides.
type ignorePattern struct {
	base    string // directory of the .gitignore, "" for the root
	glob    string // doublestar pattern relative to base
	negate  bool
	dirOnly bool
}

// parseIgnore reads the patterns of the .gitignore in directory base.
func parseIgnore(base string, data []byte) []ignorePattern {
	var out []ignorePattern
	for _, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSuffix(string(line), "\r")
		if s == "" || s[0] == '#' {
			continue
		}
		for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\\ ") {
			s = s[:len(s)-1]
		}
		if s == "" {
			continue // a line of spaces
		}
		var p ignorePattern
		switch {
		case s[0] == '!':
			p.negate, s = true, s[1:]
		case strings.HasPrefix(s, `\!`) || strings.HasPrefix(s, `\#`):
			s = s[1:]
		}
		if strings.HasSuffix(s, "/") {
			p.dirOnly, s = true, strings.TrimRight(s, "/")
		}
		if s == "" {
			continue
		}
		// doublestar's braces are literal characters to git.
		s = strings.NewReplacer("{", `\{`, "}", `\}`).Replace(s)
		if strings.Contains(s, "/") {
			s = strings.TrimPrefix(s, "/")
		} else {
			s = "**/" + s
		}
		if strings.HasSuffix(s, "/**") {
			s += "/*" // git's "x/**" is what is inside x; doublestar's matches x too
		}
		if !doublestar.ValidatePattern(s) {
			continue // git matches nothing with it either
		}
		p.base, p.glob = base, s
		out = append(out, p)
	}
	return out
}

// ignored reports whether the patterns, in order, exclude path p (relative to the
// tree's root; dir: p is a directory).
func ignored(pats []ignorePattern, p string, dir bool) bool {
	for i := len(pats) - 1; i >= 0; i-- {
		pt := pats[i]
		if pt.dirOnly && !dir {
			continue
		}
		rel := p
		if pt.base != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(p, pt.base+"/"); !ok {
				continue
			}
		}
		if m, _ := doublestar.Match(pt.glob, rel); m {
			return !pt.negate
		}
	}
	return false
}
