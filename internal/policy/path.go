package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// PathGlob is a path pattern relative to the workspace root, in doublestar syntax:
// '*' within one name, '**' across names ("src/**" is src and all below it),
// '?', '[…]' and '{a,b}'. A leading "./" or "/" is dropped: "/src/**" is "src/**".
type PathGlob struct{ pat string }

// ParsePathGlob parses and validates a path glob.
func ParsePathGlob(s string) (PathGlob, error) {
	p := strings.TrimPrefix(strings.TrimPrefix(s, "./"), "/")
	switch {
	case s == "":
		return PathGlob{}, fmt.Errorf("empty path glob")
	case strings.Contains(s, "\\"):
		return PathGlob{}, fmt.Errorf("path glob %q: use '/' between names, not '\\'", s)
	case !doublestar.ValidatePattern(p):
		return PathGlob{}, fmt.Errorf("path glob %q is not a valid pattern", s)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return PathGlob{}, fmt.Errorf("path glob %q: a workspace path cannot contain a \"..\" element", s)
		}
	}
	if p == "" {
		p = "**"
	}
	return PathGlob{p}, nil
}

func (g PathGlob) String() string { return g.pat }

// Match reports whether a workspace-relative path (already Clean) falls under g.
func (g PathGlob) Match(p string) bool {
	ok, _ := doublestar.Match(g.pat, p)
	return ok
}

// WorkspaceRoot is where the sandbox mounts the workspace; an absolute path under
// it is a workspace path.
const WorkspaceRoot = "/workspace"

// CleanPath makes a path as a tool received it workspace-relative: slashes, no
// "." or empty names, "/workspace/x" as "x". It reports false for a path that
// climbs out of the workspace or is absolute elsewhere, which no path rule or
// grant matches.
func CleanPath(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if strings.HasPrefix(p, "/") {
		rest, ok := strings.CutPrefix(p, WorkspaceRoot)
		if !ok || rest != "" && rest[0] != '/' {
			return "", false
		}
		p = "." + rest
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}
