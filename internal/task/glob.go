package task

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// pattern is a compiled glob over slash-separated repository paths:
//
//   - "*", "?" and "[...]" match within one path segment, as in path.Match;
//   - a "**" segment matches zero or more whole segments;
//   - a glob without a slash (other than a trailing one) matches a segment at any
//     depth, like .gitignore: "conftest.py" is "**/conftest.py";
//   - a glob with a slash is anchored at the repository root; a leading "/" only
//     marks it anchored, and a trailing "/" changes nothing.
//
// A path matches when the glob matches the path itself or any of its ancestor
// directories, so a protected directory protects every file created under it.
type pattern struct {
	segs []string
}

func compileGlob(glob string) (pattern, error) {
	if glob == "" {
		return pattern{}, errors.New("empty glob")
	}
	if strings.ContainsRune(glob, 0) {
		return pattern{}, errors.New("glob contains a NUL byte")
	}
	body := strings.TrimSuffix(glob, "/")
	anchored := strings.HasPrefix(body, "/")
	body = strings.TrimPrefix(body, "/")
	if body == "" {
		return pattern{}, errors.New("glob names the repository root")
	}
	segs := strings.Split(body, "/")
	anchored = anchored || len(segs) > 1
	for _, s := range segs {
		switch {
		case s == "":
			return pattern{}, errors.New(`empty path segment ("//")`)
		case s == "." || s == "..":
			return pattern{}, fmt.Errorf("%q segment; write paths relative to the repository root", s)
		case s == "**":
		case strings.Contains(s, "**"):
			return pattern{}, fmt.Errorf(`"**" must be a whole path segment, not part of %q`, s)
		default:
			if _, err := path.Match(s, ""); err != nil {
				return pattern{}, fmt.Errorf("segment %q: %w", s, err)
			}
		}
	}
	if !anchored {
		segs = append([]string{"**"}, segs...)
	}
	return pattern{segs: segs}, nil
}

// matchesPrefix reports whether the glob matches name[:k] for some k >= 1. It runs
// the glob as a small NFA over the segments, so it takes time proportional to
// len(name) * len(glob) whatever the number of "**" segments.
func (p pattern) matchesPrefix(name []string) bool {
	n := len(p.segs)
	cur := make([]bool, n+1)
	next := make([]bool, n+1)
	cur[0] = true
	p.closure(cur)
	for _, seg := range name {
		clear(next)
		for i := 0; i < n; i++ {
			if !cur[i] {
				continue
			}
			if p.segs[i] == "**" {
				next[i] = true
			} else if ok, _ := path.Match(p.segs[i], seg); ok {
				next[i+1] = true
			}
		}
		p.closure(next)
		if next[n] {
			return true
		}
		cur, next = next, cur
	}
	return false
}

// closure adds the states reachable by letting "**" match zero segments.
func (p pattern) closure(states []bool) {
	for i := 0; i < len(p.segs); i++ {
		if states[i] && p.segs[i] == "**" {
			states[i+1] = true
		}
	}
}

// escapeGlob turns a literal path into a glob matching exactly that path.
func escapeGlob(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
