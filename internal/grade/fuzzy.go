package grade

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// refit rewrites a patch that does not apply exactly into one that does, the way
// patch(1) and git apply's --recount and --ignore-whitespace are lenient, and
// says what it changed:
//
//   - hunk headers whose line counts are wrong (hand-edited or model-written
//     patches) are recounted from the hunk's lines;
//   - a hunk whose lines are not at the stated position is looked for at the
//     nearest offset, and failing that at the nearest place that matches when
//     runs of whitespace are ignored; its context and removed lines are then
//     replaced by the file's own, so the result applies strictly.
//
// Context is never dropped (no fuzz factor): every line a hunk expects must be
// there, in order, so a refitted hunk changes what its author saw. read returns
// a file's current content from the repository. The refitted patch names the
// same files; Grade applies it with the strict applier and checks its paths again.
func refit(patch []byte, read func(name string) ([]byte, error)) ([]byte, []string, error) {
	var notes []string
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		fixed, n := recount(patch)
		if n == 0 {
			return nil, nil, fmt.Errorf("parse patch: %w", err)
		}
		if files, _, err = gitdiff.Parse(bytes.NewReader(fixed)); err != nil {
			return nil, nil, fmt.Errorf("parse patch after recounting %d hunk headers: %w", n, err)
		}
		notes = append(notes, fmt.Sprintf("recounted the line counts of %d hunk headers", n))
	}
	plain := !hasGitHeader(patch)
	seen := map[string]bool{}
	var out strings.Builder
	for _, f := range files {
		if plain {
			f.OldName, f.NewName = stripPrefix(f.OldName), stripPrefix(f.NewName)
		}
		if len(f.TextFragments) > 0 && !f.IsNew && !f.IsBinary {
			if seen[f.OldName] {
				return nil, nil, fmt.Errorf("%s is changed twice in the patch: no fuzzy apply", f.OldName)
			}
			seen[f.OldName] = true
			src, err := read(f.OldName)
			if err != nil {
				return nil, nil, fmt.Errorf("read %s: %w", f.OldName, err)
			}
			n, err := refitFile(f, src)
			if err != nil {
				return nil, nil, err
			}
			notes = append(notes, n...)
		}
		out.WriteString(f.String())
	}
	return []byte(out.String()), notes, nil
}

// refitFile moves each hunk of f to where its old lines are in src.
func refitFile(f *gitdiff.File, src []byte) ([]string, error) {
	lines := splitLines(src)
	frags := slices.Clone(f.TextFragments)
	slices.SortStableFunc(frags, func(a, b *gitdiff.TextFragment) int { return int(a.OldPosition - b.OldPosition) })
	var notes []string
	next, delta := 0, int64(0) // first line a hunk may start at; lines added so far
	for _, frag := range frags {
		num := slices.Index(f.TextFragments, frag) + 1
		var old []string
		for _, l := range frag.Lines {
			if l.Op != gitdiff.OpAdd {
				old = append(old, l.Line)
			}
		}
		want := max(int(frag.OldPosition)-1, 0)
		if len(old) == 0 && frag.OldPosition == 0 {
			want = 0
		} else if len(old) == 0 {
			want = int(frag.OldPosition) // a pure insertion goes after line OldPosition
		}
		at, how := locate(lines, old, want, next)
		if at < 0 {
			return nil, fmt.Errorf("%s: hunk %d (%s) matches nowhere in the file, even ignoring whitespace",
				f.OldName, num, strings.TrimSpace(frag.Header()))
		}
		if at != want {
			notes = append(notes, fmt.Sprintf("%s: hunk %d applied at line %d, %+d lines from its header", f.OldName, num, at+1, at-want))
		}
		if how != "" {
			notes = append(notes, fmt.Sprintf("%s: hunk %d matched %s", f.OldName, num, how))
		}
		// The file's own lines stand in for the hunk's context and removals.
		k := at
		for i, l := range frag.Lines {
			if l.Op != gitdiff.OpAdd {
				frag.Lines[i].Line = lines[k]
				k++
			}
		}
		frag.OldPosition = int64(at) + 1
		if len(old) == 0 {
			frag.OldPosition = int64(at)
		}
		frag.NewPosition = frag.OldPosition + delta
		if frag.NewLines == 0 {
			frag.NewPosition--
		}
		delta += frag.LinesAdded - frag.LinesDeleted
		next = at + len(old)
	}
	return notes, nil
}

// locate finds old in lines at or after min, nearest to want: exactly first, then
// ignoring whitespace. It returns the index and how it matched ("" for exactly).
func locate(lines, old []string, want, min int) (int, string) {
	for _, eq := range []struct {
		how string
		eq  func(a, b string) bool
	}{
		{"", func(a, b string) bool { return a == b }},
		{"ignoring whitespace", func(a, b string) bool {
			return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
		}},
	} {
		for d := 0; ; d++ {
			lo, hi := want-d, want+d
			if lo < min && hi > len(lines)-len(old) {
				break
			}
			for _, at := range []int{lo, hi} {
				if at >= min && at <= len(lines)-len(old) && matches(lines[at:at+len(old)], old, eq.eq) {
					return at, eq.how
				}
				if d == 0 {
					break
				}
			}
		}
	}
	return -1, ""
}

func matches(have, want []string, eq func(a, b string) bool) bool {
	for i := range want {
		if !eq(have[i], want[i]) {
			return false
		}
	}
	return true
}

// splitLines splits src after each newline, keeping it, as gitdiff's lines are.
func splitLines(src []byte) []string {
	var lines []string
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			lines = append(lines, string(src))
			break
		}
		lines = append(lines, string(src[:i+1]))
		src = src[i+1:]
	}
	return lines
}

var hunkHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$`) })

// recount rewrites every hunk header's line counts from the lines that follow it,
// as git apply --recount does. It returns the patch and how many headers changed.
func recount(patch []byte) ([]byte, int) {
	lines := strings.SplitAfter(string(patch), "\n")
	changed := 0
	for i := 0; i < len(lines); i++ {
		m := hunkHeader().FindStringSubmatch(strings.TrimRight(lines[i], "\r\n"))
		if m == nil {
			continue
		}
		var oldN, newN int
		j := i + 1
	body:
		for ; j < len(lines); j++ {
			l := lines[j]
			switch {
			case l == "" || l == "\n":
				// An empty line inside a hunk is a context line that lost its space.
				if j+1 < len(lines) && isHunkLine(lines[j+1]) {
					oldN++
					newN++
					continue
				}
				break body
			case strings.HasPrefix(l, " "):
				oldN++
				newN++
			case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--- "):
				oldN++
			case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++ "):
				newN++
			case strings.HasPrefix(l, `\`):
			default:
				break body
			}
		}
		hdr := fmt.Sprintf("@@ -%s,%d +%s,%d @@%s\n", m[1], oldN, m[2], newN, m[3])
		if oldN == 0 && m[1] != "0" {
			hdr = fmt.Sprintf("@@ -%s,0 +%s,%d @@%s\n", m[1], m[2], newN, m[3])
		}
		if hdr != lines[i] {
			lines[i] = hdr
			changed++
		}
		i = j - 1
	}
	return []byte(strings.Join(lines, "")), changed
}

func isHunkLine(l string) bool {
	return l != "" && strings.ContainsRune(" -+\\", rune(l[0])) && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ")
}

func hasGitHeader(patch []byte) bool {
	return bytes.HasPrefix(patch, []byte("diff --git ")) || bytes.Contains(patch, []byte("\ndiff --git "))
}

// stripPrefix drops a plain diff's "a/" or "b/", as the applier does.
func stripPrefix(name string) string {
	for _, p := range []string{"a/", "b/"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return rest
		}
	}
	return name
}
