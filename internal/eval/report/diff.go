package report

import (
	"strconv"
	"strings"
)

// diffLine is one line of a patch with its class for colour: add, del, hunk,
// meta (file headers) or "" (context, and anything unrecognised).
type diffLine struct {
	Class string
	Text  string
}

// classify splits a unified diff into lines and classes them. It follows the
// hunk headers' line counts, so a removed line that reads "--- x" inside a hunk is
// a removal and not a file header; it never fails, whatever the input.
func classify(patch string) []diffLine {
	var out []diffLine
	oldLeft, newLeft := 0, 0 // lines left in the current hunk
	for line := range strings.Lines(patch) {
		text := strings.TrimSuffix(line, "\n")
		class := ""
		inHunk := oldLeft > 0 || newLeft > 0
		switch {
		case inHunk && strings.HasPrefix(text, "+"):
			class, newLeft = "add", newLeft-1
		case inHunk && strings.HasPrefix(text, "-"):
			class, oldLeft = "del", oldLeft-1
		case inHunk && strings.HasPrefix(text, `\`): // "\ No newline at end of file"
		case inHunk:
			oldLeft, newLeft = oldLeft-1, newLeft-1
		case strings.HasPrefix(text, "@@"):
			class = "hunk"
			oldLeft, newLeft = hunkCounts(text)
		case strings.HasPrefix(text, "diff "), strings.HasPrefix(text, "--- "),
			strings.HasPrefix(text, "+++ "), strings.HasPrefix(text, "index "):
			class = "meta"
		case strings.HasPrefix(text, "+"):
			class = "add"
		case strings.HasPrefix(text, "-"):
			class = "del"
		}
		out = append(out, diffLine{Class: class, Text: text})
	}
	return out
}

// hunkCounts reads "@@ -a,b +c,d @@": the old and new line counts (1 when a count
// is left out). A malformed header gives 0, 0: what follows is classed by its
// first character.
func hunkCounts(h string) (int, int) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0
	}
	count := func(r string) int {
		_, n, ok := strings.Cut(r[1:], ",")
		if !ok {
			return 1
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	return count(f[1]), count(f[2])
}
