package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// realRows clones the real rows' bundles (internal/grade/testdata/real) into a
// directory of local clones, and returns it and the testdata directory.
func realRows(t *testing.T) (repos, real string) {
	t.Helper()
	real, err := filepath.Abs("../../internal/grade/testdata/real")
	if err != nil {
		t.Fatal(err)
	}
	repos = t.TempDir()
	bundles, _ := filepath.Glob(filepath.Join(real, "*.bundle"))
	for _, b := range bundles {
		cmd := exec.Command("git", "clone", "-q", b, filepath.Join(repos, strings.TrimSuffix(filepath.Base(b), ".bundle")))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + repos, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git clone %s: %v\n%s", b, err, out)
		}
	}
	return repos, real
}

// TestImportCommand: `agentbox import` writes a task directory per row and
// prints the framework of each and why; a Go row imports with a test command
// given on the command line (issue 12: it was refused, with no way to give one),
// and a bad flag is refused naming it.
func TestImportCommand(t *testing.T) {
	_, err := exec.LookPath("git")
	testenv.Require(t, err == nil, "needs git")
	repos, real := realRows(t)
	out := filepath.Join(t.TempDir(), "tasks")
	stdout, stderr, status := cli(t, "import", "--suite", filepath.Join(real, "rows.jsonl"), "--repos", repos, "--out", out)
	if status != 0 {
		t.Fatalf("import: status %d\n%s\n%s", status, stdout, stderr)
	}
	for _, want := range []string{
		`pallets__jinja-CVE-2024-22195 +pytest +setup.cfg has \[tool:pytest\]; PYTHONPATH=src for the src/ layout`,
		`python-hyper__h11-CVE-2025-43859 +pytest +h11/tests/test_io.py imports pytest`,
		`martinblech__xmltodict-CVE-2025-9375 +unittest `, `spf13__cast-v1.9.2 +go +go.mod at the repository root`, `imported 6 tasks`,
	} {
		if !regexpLine(stdout, want) {
			t.Errorf("import output lacks %q:\n%s", want, stdout)
		}
	}

	goRows := filepath.Join(t.TempDir(), "go.jsonl")
	data, err := os.ReadFile(filepath.Join(real, "rows.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"repo": "Masterminds/semver"`) || strings.Contains(l, `"repo":"Masterminds/semver"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d semver rows in rows.jsonl", len(lines))
	}
	if err := os.WriteFile(goRows, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "tasks")
	stdout, stderr, status = cli(t, "import", "--suite", goRows, "--repos", repos, "--out", out,
		"--framework", "command", "--language", "go", "--test-command", "go test -json -count=1 -run Test ./...", "--result-format", "go-test-json")
	if status != 0 {
		t.Fatalf("import of a Go row with --test-command: status %d\n%s\n%s", status, stdout, stderr)
	}
	tk, err := task.Load(filepath.Join(out, "Masterminds__semver-v3.3.1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tk.TestCommand, " ") != "go test -json -count=1 -run Test ./..." || tk.ResultFormat != task.GoTestJSON || tk.Language != task.Go {
		t.Errorf("task: test_command %q, result_format %s, language %s", tk.TestCommand, tk.ResultFormat, tk.Language)
	}

	_, stderr, status = cli(t, "import", "--suite", goRows, "--repos", repos, "--out", t.TempDir(), "--result-format", "xunit")
	if status == 0 || !strings.Contains(stderr, `"xunit"`) {
		t.Errorf("--result-format xunit: status %d, stderr %q", status, stderr)
	}
}

// TestGradePredictions: `agentbox grade --predictions` grades SWE-bench
// predictions against imported tasks and writes eval's report: the gold patch of
// a real row resolves, the empty prediction does not, and every outcome is
// counted in a rate over every prediction.
func TestGradePredictions(t *testing.T) {
	testenv.RequireRoot(t)
	for _, mod := range []string{"pytest"} {
		err := exec.Command("/usr/bin/python3", "-c", "import "+mod).Run()
		testenv.Require(t, err == nil, "needs /usr/bin/python3 with "+mod)
	}
	defer noLeftovers(t, time.Now())
	repos, real := realRows(t)
	tasks := filepath.Join(t.TempDir(), "tasks")
	if _, stderr, status := cli(t, "import", "--suite", filepath.Join(real, "rows.jsonl"), "--repos", repos, "--out", tasks,
		"--specs", filepath.Join(real, "specs.yaml")); status != 0 {
		t.Fatalf("import: %d %s", status, stderr)
	}
	gold, err := os.ReadFile(filepath.Join(tasks, "python-hyper__h11-CVE-2025-43859", "solution.patch"))
	if err != nil {
		t.Fatal(err)
	}
	var preds []byte
	for _, p := range []map[string]any{
		{"instance_id": "python-hyper__h11-CVE-2025-43859", "model_name_or_path": "gold", "model_patch": string(gold)},
		{"instance_id": "martinblech__xmltodict-CVE-2025-9375", "model_name_or_path": "gold", "model_patch": ""},
	} {
		line, _ := json.Marshal(p)
		preds = append(append(preds, line...), '\n')
	}
	pf := filepath.Join(t.TempDir(), "preds.jsonl")
	if err := os.WriteFile(pf, preds, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results")
	stdout, stderr, status := cli(t, "grade", "--predictions", pf, "--suite", tasks, "--out", out, "--parallel", "2", "--go-cache", "off")
	if status != 0 {
		t.Fatalf("grade --predictions: status %d\n%s\n%s", status, stdout, stderr)
	}
	r, err := report.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range r.Attempts {
		got[a.Task] = string(a.Outcome)
		if fi, err := os.Stat(filepath.Join(out, a.Dir, "grade.json")); err != nil || fi.Size() == 0 {
			t.Errorf("%s: no grade.json (%v)", a.Dir, err)
		}
	}
	if got["python-hyper__h11-CVE-2025-43859"] != "resolved" || got["martinblech__xmltodict-CVE-2025-9375"] != "unresolved" {
		t.Errorf("outcomes %v, want the gold resolved and the empty unresolved\n%s", got, stdout)
	}
	if s := r.Summary; s.Attempts != 2 || s.Resolved != 1 || s.Unresolved != 1 || s.ResolvedRate != 0.5 {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(stdout, "resolved 1/2") {
		t.Errorf("no summary line:\n%s", stdout)
	}

	_, stderr, status = cli(t, "grade", "--predictions", pf, "--oracle")
	if status != 125 || !strings.Contains(stderr, "not both") {
		t.Errorf("--predictions with --oracle: status %d, %q", status, stderr)
	}
}
