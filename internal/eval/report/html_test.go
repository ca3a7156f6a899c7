package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

// parse parses a written page as a browser would.
func parse(t *testing.T, path string) *html.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// all returns the elements under n (n included) that match.
func all(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	if n.Type == html.ElementNode && match(n) {
		out = append([]*html.Node{n}, out...)
	}
	return out
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func class(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return strings.Contains(" "+attr(n, "class")+" ", " "+name+" ") }
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// section is the page's section of the i-th attempt (1-based).
func section(t *testing.T, doc *html.Node, i int) *html.Node {
	t.Helper()
	id := "attempt-" + string(rune('0'+i))
	s := all(doc, func(n *html.Node) bool { return n.Data == "section" && attr(n, "id") == id })
	if len(s) != 1 {
		t.Fatalf("%d sections with id %s", len(s), id)
	}
	return s[0]
}

// The attacker's patch and log must come out as text, byte for byte, with no
// element, attribute or URL of theirs live in the page.
func TestHTMLEscaping(t *testing.T) {
	dir, r := fixture(t)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.ToLower(string(raw)), "<script"); n != 1 {
		t.Errorf("the page holds %d <script tags, want 1 (its own)", n)
	}
	doc := parse(t, filepath.Join(dir, "report.html"))
	checkInert(t, doc)

	s := section(t, doc, 2)
	if got := textOf(all(s, class("patch"))[0]); got != evilPatch {
		t.Errorf("patch as rendered text:\n got %q\nwant %q", got, evilPatch)
	}
	if got := textOf(all(s, class("testlog"))[0]); got != evilLog {
		t.Errorf("log as rendered text:\n got %q\nwant %q", got, evilLog)
	}
	if got := textOf(s); !strings.Contains(got, "<b>conftest.py</b>") || !strings.Contains(got, "<script>alert(1)</script>") {
		t.Errorf("the verdict's tamper paths and problems are not shown as text:\n%s", got)
	}
}

// checkInert fails unless the only active content of the page is its own: one
// style sheet and one script (the page's, byte for byte), one CSP, no event
// handler, no URL but fragment links, no element that loads anything, and SVG
// only in the page's charts, made of rectangles, tooltips and text.
func checkInert(t *testing.T, doc *html.Node) {
	t.Helper()
	charts := map[*html.Node]bool{}
	for _, f := range all(doc, class("chart")) {
		for _, n := range all(f, func(n *html.Node) bool { return n.Namespace == "svg" }) {
			charts[n] = true
		}
	}
	for _, n := range all(doc, func(*html.Node) bool { return true }) {
		if n.Namespace == "svg" {
			if !charts[n] || !slices.Contains([]string{"svg", "rect", "title", "text"}, n.Data) {
				t.Errorf("SVG element <%s> outside the page's charts", n.Data)
			}
			for _, a := range n.Attr {
				if !slices.Contains([]string{"xmlns", "viewBox", "viewbox", "width", "height", "role", "aria-label", "x", "y", "class", "text-anchor"}, a.Key) {
					t.Errorf("<%s %s=%q> in a chart", n.Data, a.Key, a.Val)
				}
			}
			continue
		}
		switch n.Data {
		case "img", "iframe", "object", "embed", "link", "base", "form", "math", "video", "audio", "source":
			t.Errorf("element <%s> in the page", n.Data)
		case "script":
			if got := textOf(n); got != pageScript || len(n.Attr) != 0 {
				t.Errorf("a <script> other than the page's: %.80q", got)
			}
		case "style":
			if got := textOf(n); got != pageStyle {
				t.Errorf("a <style> other than the page's: %.80q", got)
			}
		case "meta":
			if attr(n, "http-equiv") == "Content-Security-Policy" && attr(n, "content") != csp {
				t.Errorf("CSP %q, want %q", attr(n, "content"), csp)
			}
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "src" || a.Key == "srcdoc" || a.Key == "style" {
				t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
			}
			if a.Key == "href" && !strings.HasPrefix(a.Val, "#attempt-") {
				t.Errorf("<%s href=%q>", n.Data, a.Val)
			}
		}
	}
	for _, el := range []string{"style", "script"} {
		if n := len(all(doc, tag(el))); n != 1 {
			t.Errorf("%d <%s> elements, want 1", n, el)
		}
	}
	metas := all(doc, func(n *html.Node) bool { return n.Data == "meta" && attr(n, "http-equiv") == "Content-Security-Policy" })
	if len(metas) != 1 {
		t.Errorf("%d CSP meta elements, want 1", len(metas))
	}
}

func TestHTMLTable(t *testing.T) {
	dir, r := fixture(t)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, filepath.Join(dir, "report.html"))
	tables := all(doc, func(n *html.Node) bool { return attr(n, "id") == "results" })
	if len(tables) != 1 || tables[0].Data != "table" {
		t.Fatalf("want one table#results, got %d", len(tables))
	}
	var got [][]string
	for _, tr := range all(all(tables[0], tag("tbody"))[0], tag("tr")) {
		cells := []string{attr(tr, "data-task"), attr(tr, "data-attempt"), attr(tr, "data-outcome"), "|"}
		for _, td := range all(tr, tag("td")) {
			cells = append(cells, textOf(td))
		}
		got = append(got, cells)
	}
	want := [][]string{
		{"calc-add", "1", "resolved", "|", "calc-add", "1", "resolved", "1/1", "2/2", "4", "1.2s", "3.4s", "$0.0123", ""},
		{"calc-add", "2", "tampered", "|", "calc-add", "2", "tampered", "0/0", "0/0", "4", "2.1s", "20ms", "$0.0200", "⚠ no test ran"},
		{"str-reverse", "1", "unresolved", "|", "str-reverse", "1", "unresolved", "0/0", "0/0", "50", "1m01s", "0ms", "$0.0000", "⚠ no test ran"},
		{"str-reverse", "2", "infra_error", "|", "str-reverse", "2", "infra_error", "0/0", "0/0", "0", "0ms", "0ms", "$0.0000", "⚠ no test ran"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	if got := textOf(all(doc, func(n *html.Node) bool { return attr(n, "id") == "summary" })[0]); got != fixtureSummary {
		t.Errorf("summary %q, want %q", got, fixtureSummary)
	}
}

// Each attempt's section: the timeline, the diff with its classes, the verdict;
// files that are not there are "not recorded".
func TestHTMLSections(t *testing.T) {
	dir, r := fixture(t)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, filepath.Join(dir, "report.html"))

	s1 := section(t, doc, 1)
	var steps [][]string
	for _, tr := range all(all(s1, class("steps"))[0], tag("tr"))[1:] {
		var cells []string
		for _, td := range all(tr, tag("td")) {
			cells = append(cells, textOf(td))
		}
		steps = append(steps, cells)
	}
	wantSteps := [][]string{
		{"1", "fs.read", `{"path":"calc.py"}`, "ok", "3ms", `"""A tiny calculator."""`},
		{"2", "fs.read", `{"path":"../secret"}`, "EPERM", "1ms", "../secret: path escapes the workspace"},
		{"3", "patch.apply", `{"path":"calc.py","old":"a - b","new":"a + b"}`, "ok", "12ms", `{"mode":"str_replace"}`},
		{"4", "task.finish", `{"summary":"fixed"}`, "ok, done", "2ms", `{"finished":true}`},
	}
	if d := cmp.Diff(wantSteps, steps); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
	if got := textOf(s1); !strings.Contains(got, "stopped: done: finished by task.finish") ||
		!strings.Contains(got, "Steps (4)") || !strings.Contains(got, "goal: Fix calc.add so that it returns a + b.") {
		t.Errorf("section 1 lacks the stop reason or the goal:\n%s", got)
	}
	var classes []string
	for _, sp := range all(all(s1, class("patch"))[0], tag("span")) {
		classes = append(classes, attr(sp, "class"))
	}
	if d := cmp.Diff([]string{"meta", "meta", "meta", "meta", "hunk", "", "", "", "del", "add"}, classes); d != "" {
		t.Errorf("diff line classes (-want +got):\n%s", d)
	}
	verdict := textOf(all(s1, class("verdict"))[0])
	for _, w := range []string{"resolvedtrue", "patch appliedtrue (strict)", "fail_to_pass1 passed, 0 failed", "✓ test_add", "✓ test_mul", "runs1"} {
		if !strings.Contains(verdict, w) {
			t.Errorf("verdict lacks %q:\n%s", w, verdict)
		}
	}

	// str-reverse #1: a directory with nothing in it; #2: a directory outside the
	// results directory, never read.
	for i, wantMissing := range map[int]int{3: 5, 4: 4} {
		s := section(t, doc, i)
		var missing []string
		for _, n := range all(s, class("missing")) {
			missing = append(missing, textOf(n))
		}
		if len(missing) != wantMissing || strings.Count(strings.Join(missing, ","), "not recorded") != wantMissing {
			t.Errorf("section %d: missing notes %q, want %d × not recorded", i, missing, wantMissing)
		}
	}
	if got := textOf(section(t, doc, 4)); !strings.Contains(got, "infra_errorgrade environment failed to start") {
		t.Errorf("section 4 does not show the verdict's infra_error:\n%s", got)
	}
}
