// Package textscan finds a regular expression's matches in text cheaply: a rule
// runs only where one of its hints (lowercase substrings every match contains)
// occurs, over the whole text or line by line. The secret scanner and the
// injection detector share it.
package textscan

import (
	"regexp"
	"slices"
	"strings"
)

// Lower lowercases ASCII letters only, so offsets in the result are offsets in s
// (strings.ToLower can change the length of non-ASCII text).
func Lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Hinted reports whether lower (a Lower'd text) holds one of hints; no hints
// means every text.
func Hinted(lower string, hints []string) bool {
	return len(hints) == 0 || slices.ContainsFunc(hints, func(h string) bool { return strings.Contains(lower, h) })
}

// FindAll returns re's submatch indexes in text, as offsets in text. lower is
// Lower(text). With perLine, re runs on each line that holds a hint, and no match
// spans lines.
func FindAll(re *regexp.Regexp, hints []string, perLine bool, text, lower string) [][]int {
	if !Hinted(lower, hints) {
		return nil
	}
	if !perLine {
		return re.FindAllStringSubmatchIndex(text, -1)
	}
	var out [][]int
	for at := 0; at < len(text); {
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}
		if Hinted(lower[at:end], hints) {
			for _, m := range re.FindAllStringSubmatchIndex(text[at:end], -1) {
				for i := range m {
					if m[i] >= 0 {
						m[i] += at
					}
				}
				out = append(out, m)
			}
		}
		at = end + 1
	}
	return out
}
