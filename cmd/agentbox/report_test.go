package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/eval/report"
)

// TestReportCompare runs agentbox report compare on two results directories:
// what it prints, the files it writes, --json, --fail-on-regression, and the
// errors for paths that are not runs.
func TestReportCompare(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, atts ...report.Attempt) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := report.Write(d, &report.Report{Run: name, Suite: "builtin", Policy: "scripted:reference", Attempts: atts}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := run("base", report.Attempt{Task: "calc", Attempt: 1, Resolved: true, AgentMS: 1000}, report.Attempt{Task: "rev", Attempt: 1, AgentMS: 2000})
	b := run("next", report.Attempt{Task: "calc", Attempt: 1, AgentMS: 1500}, report.Attempt{Task: "rev", Attempt: 1, Resolved: true, AgentMS: 2000})

	out, errOut, status := cli(t, "report", "compare", a, b)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	for _, w := range []string{
		"A: base (" + a + ", policy scripted:reference): resolved 1/2 (50.0%)",
		"resolved rate 0.0 pp; 1 regressions, 1 improvements, 0 tasks only in A, 0 only in B",
		"comparison: " + filepath.Join(b, "compare.json"),
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[0] == "calc" || f[0] == "rev") {
			rows = append(rows, strings.Join(f, " "))
		}
	}
	if want := []string{"calc regression 1/1 0/1 -100.0 pp $0.0000 +500ms", "rev improvement 0/1 1/1 +100.0 pp $0.0000 0ms"}; strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	var c report.Comparison
	if b, err := os.ReadFile(filepath.Join(b, "compare.json")); err != nil || json.Unmarshal(b, &c) != nil || len(c.Regressions) != 1 || c.Regressions[0] != "calc" {
		t.Errorf("compare.json: %v %+v", err, c)
	}
	if md, err := os.ReadFile(filepath.Join(b, "compare.md")); err != nil || !strings.Contains(string(md), "| calc | regression |") {
		t.Errorf("compare.md: %v\n%s", err, md)
	}

	// --json prints compare.json's content; --out writes elsewhere;
	// --fail-on-regression exits 1.
	other := t.TempDir()
	out, errOut, status = cli(t, "report", "compare", "--json", "--out", other, "--fail-on-regression", filepath.Join(a, "report.json"), b)
	if status != 1 {
		t.Errorf("--fail-on-regression with a regression: status %d (%s)", status, errOut)
	}
	var j report.Comparison
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.B.Run != "next" || len(j.Improvements) != 1 {
		t.Errorf("--json output: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(other, "compare.md")); err != nil {
		t.Errorf("--out: %v", err)
	}
	if _, _, status := cli(t, "report", "compare", "--fail-on-regression", a, a); status != 0 {
		t.Errorf("a run against itself with --fail-on-regression: status %d", status)
	}

	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil || os.WriteFile(filepath.Join(bad, "report.json"), []byte("{\"run\":"), 0o644) != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"missing A":    {[]string{a + "-absent", b}, "RUN_A: report: load " + a + "-absent: no such directory"},
		"B not a run":  {[]string{a, t.TempDir()}, "RUN_B: report: load"},
		"invalid":      {[]string{bad, b}, "RUN_A: report: load " + filepath.Join(bad, "report.json") + ": not a report"},
		"one argument": {[]string{a}, "accepts 2 arg(s), received 1"},
	} {
		_, errOut, status := cli(t, append([]string{"report", "compare"}, tc.args...)...)
		if status != 125 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: status %d, stderr %q; want 125 and %q", name, status, errOut, tc.want)
		}
	}
}
