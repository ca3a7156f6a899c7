package textscan

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindAll(t *testing.T) {
	re := regexp.MustCompile(`(?i)key=(\w+)`)
	text := "x\nKEY=abc\nnothing\nkey=de"
	lower := Lower(text)
	// Per line: offsets in text, submatches included, only lines with a hint.
	want := [][]int{{2, 9, 6, 9}, {18, 24, 22, 24}}
	if got := FindAll(re, []string{"key="}, true, text, lower); !cmp.Equal(got, want) {
		t.Errorf("per line: %v, want %v", got, want)
	}
	if got := FindAll(re, []string{"key="}, false, text, lower); !cmp.Equal(got, want) {
		t.Errorf("whole text: %v, want %v", got, want)
	}
	if got := FindAll(re, []string{"token"}, false, text, lower); got != nil {
		t.Errorf("no hint in the text, yet %v", got)
	}
	// A match may not span lines when per line.
	re2 := regexp.MustCompile(`a\nb`)
	if got := FindAll(re2, nil, true, "a\nb", "a\nb"); got != nil {
		t.Errorf("per line matched across lines: %v", got)
	}
	if Lower("ÄBc") != "Äbc" || len(Lower("ÄBc")) != len("ÄBc") {
		t.Errorf("Lower changed non-ASCII or the length: %q", Lower("ÄBc"))
	}
}
