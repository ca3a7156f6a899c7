package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch string
		want  []string
	}{
		{"git diff", goodPatch, []string{"meta", "meta", "meta", "meta", "hunk", "", "", "", "del", "add"}},
		// A removed line that reads like a file header is still a removal: the
		// hunk's counts say it belongs to the hunk.
		{"header-like lines inside a hunk", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- not a header\n-b\n+++ not a header\n+c\n--- a/y\n",
			[]string{"meta", "meta", "hunk", "del", "del", "add", "add", "meta"}},
		{"counts left out", "@@ -1 +1 @@\n-a\n+b\n+c\n", []string{"hunk", "del", "add", "add"}},
		{"no newline marker", "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n", []string{"hunk", "del", "", "add"}},
		{"malformed hunk header", "@@ garbage\n+x\n-y\n z\n", []string{"hunk", "add", "del", ""}},
		{"not a diff", "hello\n<script>\n", []string{"", ""}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var text strings.Builder
			for _, l := range classify(tc.patch) {
				got = append(got, l.Class)
				text.WriteString(l.Text + "\n")
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("classes (-want +got):\n%s", d)
			}
			if tc.patch != "" && text.String() != tc.patch {
				t.Errorf("lines do not rebuild the patch: %q", text.String())
			}
		})
	}
}

// FuzzHTML writes a report whose patch, log and task id are arbitrary bytes and
// checks that the page parses to the same structure: no element or attribute of
// the input's, and the patch and log back as text (after the HTML parser's own
// normalisation of line ends and NUL, and UTF-8 repair).
func FuzzHTML(f *testing.F) {
	f.Add(evilPatch, evilLog, "calc-add")
	f.Add("</pre><script>x</script>", "<!--", `"><img src=x onerror=alert(1)>`)
	f.Add("\x00\r\n\xff\xfe</span>", "]]></style></textarea><plaintext>", "</title><script>")
	f.Add("<![CDATA[", "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">", "\u2028")
	f.Fuzz(func(t *testing.T, patch, log, task string) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a/patch.diff"), []byte(patch), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a/test.log"), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		r := &Report{Run: task, Attempts: []Attempt{{Task: task, Attempt: 1, Dir: "a", Error: task}}}
		if err := Write(dir, r); err != nil {
			t.Fatal(err)
		}
		doc := parse(t, filepath.Join(dir, "report.html"))
		checkInert(t, doc)
		s := section(t, doc, 1)
		norm := func(s string) string {
			s = strings.ToValidUTF8(s, "\uFFFD")
			s = strings.ReplaceAll(s, "\r\n", "\n")
			s = strings.ReplaceAll(s, "\r", "\n")
			return strings.ReplaceAll(s, "\x00", "\uFFFD")
		}
		wantPatch := norm(patch)
		if patch != "" && !strings.HasSuffix(patch, "\n") {
			wantPatch += "\n"
		}
		if got := textOf(all(s, class("patch"))[0]); got != wantPatch {
			t.Errorf("patch:\n got %q\nwant %q", got, wantPatch)
		}
		if got := textOf(all(s, class("testlog"))[0]); got != norm(log) {
			t.Errorf("log:\n got %q\nwant %q", got, norm(log))
		}
		rows := all(all(doc, func(n *html.Node) bool { return attr(n, "id") == "results" })[0], tag("tr"))
		if len(rows) != 2 || attr(rows[1], "data-task") != strings.ToValidUTF8(strings.ReplaceAll(task, "\x00", "\uFFFD"), "\uFFFD") {
			t.Errorf("%d rows; data-task %q, want %q", len(rows), attr(rows[len(rows)-1], "data-task"), task)
		}
	})
}
