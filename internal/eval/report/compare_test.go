package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func runOf(name string, atts ...Attempt) *Report {
	return &Report{Run: name, Suite: "builtin", Policy: "openai", Model: "m", Attempts: atts}
}

func TestCompare(t *testing.T) {
	res := func(task string, n int, ok bool, usd float64, agent int64) Attempt {
		return Attempt{Task: task, Attempt: n, Resolved: ok, CostUSD: usd, AgentMS: agent}
	}
	a := runOf("a",
		res("down", 1, true, 0.1, 1000), res("down", 2, true, 0.1, 1000),
		res("up", 1, false, 0.2, 4000), res("up", 2, false, 0.2, 4000),
		res("same", 1, true, 0.1, 1000), res("same", 2, false, 0.1, 1000), res("same", 3, false, 0.1, 1000),
		res("gone", 1, true, 0, 0))
	b := runOf("b",
		res("down", 1, true, 0.3, 3000), res("down", 2, false, 0.3, 5000),
		res("up", 1, true, 0.1, 1000), Attempt{Task: "up", Attempt: 2, CostUnknown: true, AgentMS: 1000},
		// 2 of 6 is the same rate as 1 of 3: no change.
		res("same", 1, true, 0.1, 1000), res("same", 2, true, 0.1, 1000), res("same", 3, false, 0.1, 1000),
		res("same", 4, false, 0.1, 1000), res("same", 5, false, 0.1, 1000), res("same", 6, false, 0.1, 1000),
		res("new", 1, false, 0, 0))
	c := Compare(a, "runs/a", b, "runs/b")
	if d := cmp.Diff([]string{"down"}, c.Regressions); d != "" {
		t.Errorf("regressions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"up"}, c.Improvements); d != "" {
		t.Errorf("improvements (-want +got):\n%s", d)
	}
	if !cmp.Equal(c.OnlyA, []string{"gone"}) || !cmp.Equal(c.OnlyB, []string{"new"}) {
		t.Errorf("only in A %q, only in B %q", c.OnlyA, c.OnlyB)
	}
	var got []string
	for _, d := range c.Tasks {
		got = append(got, strings.Join(d.cells(), " | "))
	}
	want := []string{
		"down | regression | 2/2 | 1/2 | -50.0 pp | +$0.2000 | +3.0s",
		"gone | only_a | 1/1 | - | - | - | -",
		"new | only_b | - | 0/1 | - | - | -",
		"same | same | 1/3 | 2/6 | 0.0 pp | $0.0000 | 0ms",
		"up | improvement | 0/2 | 1/2 | +50.0 pp | unknown | -3.0s", // an attempt of B without a price
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tasks (-want +got):\n%s", d)
	}
	if c.A.Attempts != 8 || c.B.Resolved != 4 || c.B.CostUnknown != 1 || c.A.Dir != "runs/a" {
		t.Errorf("sides %+v %+v", c.A, c.B)
	}

	var text bytes.Buffer
	if err := c.Text(&text); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	for i, w := range []string{
		"A: a (runs/a, policy openai, model m): resolved 4/8 (50.0%), cost $0.9000, agent time 13.0s",
		"B: b (runs/b, policy openai, model m): resolved 4/11 (36.4%), cost $1.3000 + unknown (1 of 11 attempts without prices), agent time 16.0s",
		"resolved rate -13.6 pp; 1 regressions, 1 improvements, 1 tasks only in A, 1 only in B",
	} {
		if lines[i] != w {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], w)
		}
	}
	// The changed tasks, regressions first; the unchanged one counted.
	order := []string{"down", "up", "gone", "new"}
	for i, task := range order {
		if f := strings.Fields(lines[5+i]); len(f) == 0 || f[0] != task {
			t.Errorf("changed row %d: %q, want task %s", i, lines[5+i], task)
		}
	}
	if !strings.Contains(text.String(), "\n1 tasks unchanged\n") {
		t.Errorf("text:\n%s", text.String())
	}
}

// Different suites and an interrupted run are said; task ids are data in both
// the terminal text and the Markdown.
func TestCompareNotesAndEscaping(t *testing.T) {
	evil := "t\x1b]0;x\x07|<img src=x onerror=alert(1)>"
	a := runOf("a", Attempt{Task: evil, Attempt: 1, Resolved: true})
	b := runOf("b", Attempt{Task: evil, Attempt: 1})
	b.Suite, b.Interrupted = "other", true
	c := Compare(a, "a", b, "b")
	if d := cmp.Diff([]string{"the runs are of different suites (builtin and other)", "run b was interrupted: its unfinished attempts are absent"}, c.Notes); d != "" {
		t.Errorf("notes (-want +got):\n%s", d)
	}
	var text, md bytes.Buffer
	if err := c.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := c.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(text.Bytes(), "\x1b\x07") || !strings.Contains(text.String(), "note: run b was interrupted") {
		t.Errorf("text:\n%q", text.String())
	}
	if strings.Contains(md.String(), "<img") || strings.Count(md.String(), "\n| t\uFFFD") != 1 || !strings.Contains(md.String(), `\|&lt;img`) {
		t.Errorf("markdown:\n%s", md.String())
	}
}

func TestWriteComparison(t *testing.T) {
	dir := t.TempDir()
	c := Compare(runOf("a", Attempt{Task: "x", Attempt: 1, Resolved: true}), "a", runOf("b", Attempt{Task: "x", Attempt: 1}), "b")
	if err := WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, &back); d != "" {
		t.Errorf("compare.json round trip (-want +got):\n%s", d)
	}
	md, err := os.ReadFile(filepath.Join(dir, "compare.md"))
	if err != nil || !strings.Contains(string(md), "| x | regression | 1/1 | 0/1 | -100.0 pp | $0.0000 | 0ms |") {
		t.Errorf("compare.md (%v):\n%s", err, md)
	}
	if err := WriteComparison(filepath.Join(dir, "absent"), c); err == nil {
		t.Error("WriteComparison into a missing directory succeeded")
	}
}

// Load names what is wrong with a path that is not a run.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "report.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", `{"run":"r","attempts":[]}`)
	for name, tc := range map[string]struct{ path, want string }{
		"missing":      {filepath.Join(dir, "absent"), "no such directory; give the results directory of an agentbox eval run"},
		"no report":    {t.TempDir(), "no report.json in it: not the results directory of an agentbox eval run, or a run that has not finished"},
		"bad json":     {write("bad", "{"), "not a report: unexpected end of JSON input"},
		"not a report": {write("other", `{"name":"x"}`), `not a report of agentbox eval: it has no "attempts"`},
	} {
		if _, err := Load(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	for _, p := range []string{good, filepath.Join(good, "report.json")} {
		if r, err := Load(p); err != nil || r.Run != "r" {
			t.Errorf("Load(%s): %v", p, err)
		}
	}
}
