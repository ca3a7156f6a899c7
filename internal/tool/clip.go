package tool

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Clipped is text cut to fit what reaches the model: its head and tail, with a
// marker in between that counts what was left out.
type Clipped struct {
	Text      string `json:"-"`
	Truncated bool   `json:"truncated"`
	// TotalBytes and TotalLines describe the whole text; OmittedBytes and
	// OmittedLines what the marker stands for.
	TotalBytes   int `json:"total_bytes"`
	TotalLines   int `json:"total_lines"`
	OmittedBytes int `json:"omitted_bytes,omitempty"`
	OmittedLines int `json:"omitted_lines,omitempty"`
}

// Clip keeps s whole if it fits in max bytes, else its first and last parts (the
// tail gets the larger share: errors and test summaries come last), cut at line
// boundaries where one is near and always at rune boundaries.
func Clip(s string, max int) Clipped {
	c := Clipped{Text: s, TotalBytes: len(s), TotalLines: lines(s)}
	if len(s) <= max || max <= 0 {
		return c
	}
	headLen := max * 2 / 5
	tailLen := max - headLen
	head := s[:runeStart(s, headLen)]
	if i := strings.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	tail := s[runeStart(s, len(s)-tailLen):]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	omitted := s[len(head) : len(s)-len(tail)]
	c.Truncated = true
	c.OmittedBytes = len(omitted)
	c.OmittedLines = strings.Count(omitted, "\n")
	c.Text = head + fmt.Sprintf("\n[… %d bytes (%d lines) omitted of %d bytes; fetch them by ref with artifact.read …]\n",
		c.OmittedBytes, c.OmittedLines, c.TotalBytes) + tail
	return c
}

// runeStart moves i back to the start of a rune.
func runeStart(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
