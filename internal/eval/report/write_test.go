package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/version"
)

const fixtureSummary = "resolved 1/4 (25.0%) [33.3% of 3 graded]; tasks resolved 1/2; pass@1 25.0%, pass@2 50.0%; unresolved 1, tampered 1, harness_error 0, infra_error 1, model_error 0; total time 1m23s; cost $0.0323"

func TestWriteLoad(t *testing.T) {
	dir, r := fixture(t)
	orig := *r
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(orig, *r) {
		t.Error("Write modified its report")
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := orig
	want.Summary = Summary{Tasks: 2, Attempts: 4, Resolved: 1, Unresolved: 1, Tampered: 1, InfraErrors: 1,
		TasksResolved: 1, ResolvedRate: 1.0 / 4, GradedRate: 1.0 / 3, CostUSD: 0.0323}
	want.PassAtK = []float64{0.25, 0.5}
	want.Agentbox = version.Get() // the build that wrote it
	if got.Agentbox.Version == "" {
		t.Error("report.json does not say which agentbox wrote it")
	}
	want.Tasks = []TaskStats{
		{Task: "calc-add", Title: "Fix add", Attempts: 2, Resolved: 1, PassAtK: []float64{0.5, 1},
			Outcomes: map[grade.Outcome]int{grade.Resolved: 1, grade.Tampered: 1}, NoTests: 1, CostUSD: 0.0323, AgentMS: 3334, DurationMS: 4700},
		{Task: "str-reverse", Attempts: 2, PassAtK: []float64{0, 0},
			Outcomes: map[grade.Outcome]int{grade.Unresolved: 1, grade.InfraError: 1}, NoTests: 2, AgentMS: 61000},
	}
	// Write records each attempt's outcome.
	want.Attempts = slices.Clone(want.Attempts)
	for i, o := range []grade.Outcome{grade.Resolved, grade.Tampered, grade.Unresolved, grade.InfraError} {
		want.Attempts[i].Outcome = o
	}
	if d := cmp.Diff(&want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); d != "" {
		t.Errorf("Load after Write (-want +got):\n%s", d)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("{\n  \"run\": \"run-1\",")) {
		t.Errorf("report.json is not indented: %.40q", b)
	}
	// Nothing but the three reports and the attempts' directories: no temporary
	// file left behind.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{"calc-add", "report.html", "report.json", "report.md", "str-reverse"}, names); d != "" {
		t.Errorf("results directory (-want +got):\n%s", d)
	}
}

func TestWriteErrors(t *testing.T) {
	_, r := fixture(t)
	if err := Write(filepath.Join(t.TempDir(), "absent"), r); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of a directory without report.json succeeded")
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "report.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil {
		t.Error("Load of a truncated report.json succeeded")
	}
}

func TestMarkdown(t *testing.T) {
	dir, r := fixture(t)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := `# agentbox eval run-1

suite builtin · policy scripted:reference · started 2025-01-02 03:00:00Z

| task | attempt | outcome | fail_to_pass | pass_to_pass | steps | agent time | grade time | cost |
|---|---:|---|---:|---:|---:|---:|---:|---:|
| calc-add | 1 | resolved | 1/1 | 2/2 | 4 | 1.2s | 3.4s | $0.0123 |
| calc-add | 2 | tampered | 0/0 | 0/0 | 4 | 2.1s | 20ms | $0.0200 |
| str-reverse | 1 | unresolved | 0/0 | 0/0 | 50 | 1m01s | 0ms | $0.0000 |
| str-reverse | 2 | infra\_error | 0/0 | 0/0 | 0 | 0ms | 0ms | $0.0000 |

**` + mdEscaper.Replace(fixtureSummary) + `**
`
	if d := cmp.Diff(want, string(b)); d != "" {
		t.Errorf("report.md (-want +got):\n%s", d)
	}
}

// A task id is data: it must neither split a Markdown cell nor become HTML in a
// viewer that renders inline HTML.
func TestMarkdownCellEscaping(t *testing.T) {
	var b strings.Builder
	r := &Report{Run: "r", Attempts: []Attempt{{Task: "a|b<img src=x onerror=alert(1)>\n| x", Attempt: 1}}}
	if err := markdown(&b, r, Summarize(r.Attempts)); err != nil {
		t.Fatal(err)
	}
	line := strings.Split(b.String(), "\n")[6]
	want := `| a\|b&lt;img src=x onerror=alert(1)&gt; \| x | 1 | unresolved | 0/0 | 0/0 | 0 | 0ms | 0ms | $0.0000 |`
	if line != want {
		t.Errorf("row\n got %s\nwant %s", line, want)
	}
}

func TestTable(t *testing.T) {
	_, r := fixture(t)
	r.Attempts[2].Task = "str-reverse\x1b]0;pwned\x07\u009b2J"
	var b bytes.Buffer
	Table(&b, r)
	want := `task                      attempt  outcome      fail_to_pass  pass_to_pass  steps  agent time  grade time  cost
calc-add                  1        resolved     1/1           2/2           4      1.2s        3.4s        $0.0123
calc-add                  2        tampered     0/0           0/0           4      2.1s        20ms        $0.0200
str-reverse�]0;pwned��2J  1        unresolved   0/0           0/0           50     1m01s       0ms         $0.0000
str-reverse               2        infra_error  0/0           0/0           0      0ms         0ms         $0.0000
` + strings.Replace(fixtureSummary, "tasks resolved 1/2; pass@1 25.0%, pass@2 50.0%", "tasks resolved 1/3", 1) + "\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("Table (-want +got):\n%s", d)
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07") || bytes.Contains(b.Bytes(), []byte("\xc2\x9b")) {
		t.Error("a control character reached the terminal")
	}
}

func TestSummaryLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Report
		want string
	}{
		{"empty", Report{}, "resolved 0/0 (0.0%); tasks resolved 0/0; unresolved 0, tampered 0, harness_error 0, infra_error 0, model_error 0; total time 0ms; cost $0.0000"},
		{"all resolved, time from the clock", Report{
			StartedAt: fixedTime, FinishedAt: fixedTime.Add(90 * 60e9),
			Attempts: []Attempt{{Task: "a", Attempt: 1, Resolved: true, CostUSD: 1.5}, {Task: "a", Attempt: 2, Resolved: true}}},
			"resolved 2/2 (100.0%); tasks resolved 1/1; pass@1 100.0%, pass@2 100.0%; unresolved 0, tampered 0, harness_error 0, infra_error 0, model_error 0; total time 1h30m; cost $1.5000"},
		// A model without prices costs "unknown", never a $0.0000 that reads as
		// free; a run partly priced says how much is left out.
		{"no prices", Report{Attempts: []Attempt{{Task: "a", CostUnknown: true}, {Task: "b", CostUnknown: true, CostUSD: 0}}},
			"resolved 0/2 (0.0%); tasks resolved 0/2; unresolved 2, tampered 0, harness_error 0, infra_error 0, model_error 0; total time 0ms; cost unknown (no prices)"},
		{"some prices", Report{Attempts: []Attempt{{Task: "a", CostUSD: 0.25}, {Task: "b", CostUnknown: true, CostUSD: 0.5}}},
			"resolved 0/2 (0.0%); tasks resolved 0/2; unresolved 2, tampered 0, harness_error 0, infra_error 0, model_error 0; total time 0ms; cost $0.2500 + unknown (1 of 2 attempts without prices)"},
		// Regression (issue 12): errors left the rate's denominator, so a patch that
		// turned "not resolved" into an infrastructure error raised the rate. Every
		// attempt counts in resolved_rate; the graded rate is printed beside it.
		{"every attempt in the rate, the graded rate beside it, interrupted", Report{Interrupted: true, DurationMS: 999,
			Attempts: []Attempt{{Task: "a", Error: "no env"}, {Task: "b", InfraError: "x", Resolved: true}, {Task: "c"}, {Task: "d", Resolved: true},
				{Task: "e", StopReason: "model_error"}, {Task: "f", Verdict: grade.Verdict{HarnessError: "setup exited 1"}}}},
			"resolved 1/6 (16.7%) [50.0% of 2 graded]; tasks resolved 1/6; unresolved 1, tampered 0, harness_error 1, infra_error 2, model_error 1; total time 999ms; cost $0.0000; interrupted: unfinished attempts are absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summaryLine(&tc.r, Summarize(tc.r.Attempts)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
