package grade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/gocache"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRealRows grades the rows of testdata/real as SWE-bench grades them: each is
// a real fix of a public project (Jinja, h11, xmltodict: pytest and unittest, a
// src/ layout, MarkupSafe from the system; semver and cast: go test, cast with a
// module dependency) with the project's own tests, shipped as a git bundle
// (make_rows.py says how they were built). Imported with the specs file, the
// gold patch must resolve each row and the empty patch must not; imported
// without it, detection must choose the same frameworks. The Go rows get their
// modules from the local proxy tree testdata/real/goproxy
// (gocache.DownloadModules), and grade with GOPROXY=off.
//
// Issue 12: before the native frameworks, 0 of 6 gold patches graded resolved.
func TestRealRows(t *testing.T) {
	testenv.SkipShort(t, "grades six real rows, gold and empty, two of them Go with module dependencies (~30 s)")
	m := envtest.New(t)
	tasks, done, o := realRows(t, true)
	type result struct {
		id, framework string
		gold, empty   Verdict
		goldT, emptyT time.Duration
		f2p, p2p      int
	}
	results := make([]result, len(tasks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, tk := range tasks {
		ref, err := tk.ReadReference()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := result{id: tk.ID, framework: string(done[i].Choice.Framework), f2p: len(tk.FailToPass), p2p: len(tk.PassToPass)}
			start := time.Now()
			r.gold, _ = Grade(t.Context(), m, owner, tk, ref, o)
			r.goldT = time.Since(start)
			start = time.Now()
			r.empty, _ = Grade(t.Context(), m, owner, tk, nil, o)
			r.emptyT = time.Since(start)
			results[i] = r
		}()
	}
	wg.Wait()
	resolved := 0
	var table strings.Builder
	table.WriteString("row | framework | F2P/P2P | canaries | gold | empty\n")
	for _, r := range results {
		if r.gold.Outcome == Resolved {
			resolved++
		}
		table.WriteString(strings.Join([]string{r.id, r.framework, strconv.Itoa(r.f2p) + "/" + strconv.Itoa(r.p2p), strconv.Itoa(r.gold.Canaries),
			string(r.gold.Outcome) + " " + r.goldT.Round(100*time.Millisecond).String(),
			string(r.empty.Outcome) + " " + r.emptyT.Round(100*time.Millisecond).String()}, " | ") + "\n")
		if r.gold.Outcome != Resolved {
			t.Errorf("%s: the gold patch is %s, want resolved: %s", r.id, r.gold.Outcome, dump(r.gold))
		}
		// Resolved with canaries in: no canary passed for the real fix.
		if r.gold.Runs != 1 || r.gold.Canaries == 0 && noCanaries[r.id] == "" {
			t.Errorf("%s: %d hidden tests ran with a canary in %d runs, want some in 1", r.id, r.gold.Canaries, r.gold.Runs)
		}
		if r.empty.Outcome != Unresolved {
			t.Errorf("%s: the empty patch is %s, want unresolved: %s", r.id, r.empty.Outcome, dump(r.empty))
		}
		// Unresolved because its fail_to_pass tests ran and failed, not because they
		// went missing: the ids map onto what the framework reports.
		if len(r.empty.FailToPass.Missing) > 0 || len(r.empty.FailToPass.Failed) != r.f2p || len(r.gold.PassToPass.Passed) != r.p2p {
			t.Errorf("%s: empty F2P failed %d missing %d of %d; gold P2P passed %d of %d", r.id,
				len(r.empty.FailToPass.Failed), len(r.empty.FailToPass.Missing), r.f2p, len(r.gold.PassToPass.Passed), r.p2p)
		}
	}
	t.Logf("%d of %d gold patches resolved\n%s", resolved, len(results), table.String())
}

// noCanaries are the real rows whose hidden tests get no canary, and why.
var noCanaries = map[string]string{
	"spf13__cast-v1.9.2": "its checks are quicktest's c.Assert calls, which RewriteGo does not invert",
}

// TestRealForgeries grades the forgeries of testdata/real/forgeries, each
// against the real row its name starts with (ROW--what.diff), and wants the
// verdict its header expects (the adversarial header format): "forged" means
// resolved without canaries (the forgery works on the project's own
// framework) and tampered, with the canaries' reasons, with them. The canary
// catch rate on real rows is logged.
func TestRealForgeries(t *testing.T) {
	testenv.SkipShort(t, "grades the real rows' forgeries with and without canaries")
	m := envtest.New(t)
	tasks, _, o := realRows(t, false)
	byID := map[string]*task.Task{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	names, _ := filepath.Glob(filepath.Join("testdata", "real", "forgeries", "*.diff"))
	if len(names) < 4 {
		t.Fatalf("%d forgeries, want at least 4", len(names))
	}
	var (
		mu   sync.Mutex
		rows []string
	)
	t.Cleanup(func() {
		slices.Sort(rows)
		msg := "canaries on the real rows' forgeries\npatch\twithout canaries\twith canaries\n" + strings.Join(rows, "\n")
		t.Log(msg)
		fmt.Fprintln(os.Stderr, "grade: TestRealForgeries: "+msg)
	})
	sem := make(chan struct{}, 2)
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		a, err := parseAdversarial(filepath.Base(n), data)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		row, _, _ := strings.Cut(a.name, "--")
		tk := byID[row]
		if tk == nil {
			t.Fatalf("%s: no row %q in testdata/real", n, row)
		}
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			plain := o
			plain.NoCanaries = true
			without := gradeIt(t, m, tk, a.patch, plain)
			with := gradeIt(t, m, tk, a.patch, o)
			outcome := func(v Verdict) string {
				if len(v.Forged) > 0 {
					return "forged"
				}
				return string(v.Outcome)
			}
			mu.Lock()
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s", a.name, outcome(without), outcome(with)))
			mu.Unlock()
			switch a.expect {
			case "forged":
				if !without.Resolved {
					t.Errorf("without canaries the forgery is %s, want resolved (it must work to prove anything): %s", without.Outcome, dump(without))
				}
				if !with.Tampered || len(with.Forged) == 0 || with.Resolved {
					t.Errorf("with canaries: %s, want tampered and forged: %s", with.Outcome, dump(with))
				}
			case "tampered":
				for _, p := range a.tamper {
					if !with.Tampered || !slices.Contains(with.TamperPaths, p) {
						t.Errorf("tamper paths %q, want %q among them: %s", with.TamperPaths, p, dump(with))
					}
				}
			default:
				if with.Resolved || with.Tampered != (a.expect == "tampered") {
					t.Errorf("want %s: %s", a.expect, dump(with))
				}
			}
			if with.Outcome == HarnessError || with.Outcome == InfraError {
				t.Errorf("outcome %s: a patch turned its verdict into an error: %s", with.Outcome, dump(with))
			}
		})
	}
}

// TestRealSuiteAsOnHost runs two projects' whole pytest suites in a grading
// environment (no network but the sandbox's own lo) and on the host, and wants
// the same outcome for every test: Jinja's (hundreds of tests, a src/ layout,
// MarkupSafe from the system) and h11's, whose test_against_stdlib_http starts a
// local HTTP server and connects to it (its two tests failed while Landlock
// refused every TCP bind).
func TestRealSuiteAsOnHost(t *testing.T) {
	testenv.SkipShort(t, "runs two projects' whole suites in a sandbox and on the host")
	m := envtest.New(t)
	_, err := exec.LookPath("git")
	testenv.Require(t, err == nil, "needs git")
	err = exec.Command("/usr/bin/python3", "-c", "import pytest, markupsafe").Run()
	testenv.Require(t, err == nil, "needs /usr/bin/python3 with pytest and markupsafe (Debian python3-pytest, python3-markupsafe)")
	for _, tc := range []struct {
		bundle, tests string
		env           []string
		min           int
	}{
		{"pallets__jinja", "tests", []string{"PYTHONPATH=src"}, 500},
		{"python-hyper__h11", "h11/tests", nil, 50},
	} {
		t.Run(tc.bundle, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), "repo")
			cmd := exec.Command("git", "clone", "-q", "-b", "main", filepath.Join("testdata/real", tc.bundle+".bundle"), repo)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git clone: %v\n%s", err, out)
			}
			if err := os.RemoveAll(filepath.Join(repo, ".git")); err != nil {
				t.Fatal(err)
			}
			argv := func(results string) []string {
				return []string{"/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml=" + results, tc.tests}
			}
			baseEnv := append([]string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}, tc.env...)

			hostRes := filepath.Join(t.TempDir(), "results.xml")
			host := exec.Command(argv(hostRes)[0], argv(hostRes)[1:]...)
			host.Dir = repo
			host.Env = append(baseEnv, "HOME="+t.TempDir(), "TMPDIR="+t.TempDir())
			out, _ := host.CombinedOutput()
			hostXML, err := os.ReadFile(hostRes)
			if err != nil {
				t.Fatalf("the host run wrote no results: %v\n%s", err, out)
			}
			want, err := task.Parse(task.JUnit, task.Output{ResultsFile: hostXML})
			if err != nil {
				t.Fatal(err)
			}

			info, err := m.Create(t.Context(), envCreate(repo))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Destroy(context.WithoutCancel(t.Context()), owner, info.ID) })
			res, err := m.Exec(t.Context(), owner, info.ID, env.ExecRequest{Argv: argv("/tmp/results.xml"), Env: append(baseEnv, "HOME=/tmp", "TMPDIR=/tmp"),
				Cwd: "/workspace", Timeout: 10 * time.Minute, OutputLimit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			cat, err := m.Exec(t.Context(), owner, info.ID, env.ExecRequest{Argv: []string{"cat", "/tmp/results.xml"}, Cwd: "/workspace", Timeout: time.Minute, OutputLimit: 64 << 20})
			if err != nil || cat.ExitStatus() != 0 {
				t.Fatalf("the sandboxed run wrote no results (exit %d): %v\n%s", res.ExitStatus(), err, res.Stdout+res.Stderr)
			}
			got, err := task.Parse(task.JUnit, task.Output{ResultsFile: []byte(cat.Stdout)})
			if err != nil {
				t.Fatal(err)
			}
			passed := 0
			for id, o := range want.Tests {
				if o == task.OutcomePass {
					passed++
				}
				if got.Tests[id] != o {
					t.Errorf("%s: %q in the sandbox, %q on the host", id, got.Tests[id], o)
				}
			}
			if len(got.Tests) != len(want.Tests) || passed < tc.min {
				t.Errorf("%d tests in the sandbox, %d on the host (%d passed there); want the same, at least %d passing", len(got.Tests), len(want.Tests), passed, tc.min)
			}
			t.Logf("%s: %d tests, %d passed, the same in the sandbox (exit %d)", tc.bundle, len(want.Tests), passed, res.ExitStatus())
		})
	}
}

// envCreate is a grading environment's options, as Grade makes them, over repo.
func envCreate(repo string) env.CreateOptions {
	return env.CreateOptions{Owner: owner, Workspace: repo, Limits: env.Limits{Memory: 2 << 30, Pids: 512}}
}

// realRows imports the rows of testdata/real with its specs file (and, with
// detect, without it, wanting the same frameworks detected), and returns the
// tasks, what the import chose, and the options to grade them with: the Go
// rows' modules come from the local proxy tree testdata/real/goproxy.
func realRows(t *testing.T, detect bool) ([]*task.Task, []task.Imported, Options) {
	t.Helper()
	for _, tool := range []string{"git", "go"} {
		_, err := exec.LookPath(tool)
		testenv.Require(t, err == nil, "needs "+tool)
	}
	for _, mod := range []string{"pytest", "markupsafe"} {
		err := exec.Command("/usr/bin/python3", "-c", "import "+mod).Run()
		testenv.Require(t, err == nil, "needs /usr/bin/python3 with "+mod+" (Debian python3-"+mod+")")
	}
	real, err := filepath.Abs("testdata/real")
	if err != nil {
		t.Fatal(err)
	}
	repos := t.TempDir()
	bundles, _ := filepath.Glob(filepath.Join(real, "*.bundle"))
	if len(bundles) < 5 {
		t.Fatalf("testdata/real holds %d bundles, want 5", len(bundles))
	}
	for _, b := range bundles {
		dst := filepath.Join(repos, strings.TrimSuffix(filepath.Base(b), ".bundle"))
		cmd := exec.Command("git", "clone", "-q", b, dst)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + repos, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git clone %s: %v\n%s", b, err, out)
		}
	}
	specs, err := task.ReadSpecsFile(filepath.Join(real, "specs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rows := func() *os.File {
		f, err := os.Open(filepath.Join(real, "rows.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	done, err := task.ImportSWEBench(t.Context(), rows(), task.ImportOptions{OutDir: t.TempDir(), Repos: repos, Specs: specs})
	if err != nil {
		t.Fatal(err)
	}
	if detect {
		detected, err := task.ImportSWEBench(t.Context(), rows(), task.ImportOptions{OutDir: t.TempDir(), Repos: repos})
		if err != nil {
			t.Fatalf("import without specs: %v", err)
		}
		for i, im := range done {
			// xmltodict runs nose2 upstream; its tests are unittest's, and detection
			// (no pytest anywhere) chooses unittest as the spec does.
			if detected[i].Choice.Framework != im.Choice.Framework {
				t.Errorf("%s: detected %s (%s), the spec says %s", im.ID, detected[i].Choice.Framework, detected[i].Choice.Reason, im.Choice.Framework)
			}
		}
	}
	var tasks []*task.Task
	for _, im := range done {
		tk, err := task.Load(im.Dir)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, tk)
	}
	repoCount := map[string]bool{}
	for _, tk := range tasks {
		repoCount[tk.Metadata["repo"].(string)] = true
	}
	if len(tasks) < 5 || len(repoCount) < 3 {
		t.Fatalf("%d rows from %d projects, want at least 5 from 3", len(tasks), len(repoCount))
	}
	modCache := filepath.Join(t.TempDir(), "gomodcache")
	if err := gocache.DownloadModules(t.Context(), tasks, modCache, "file://"+filepath.Join(real, "goproxy"), ""); err != nil {
		t.Fatal(err)
	}
	return tasks, done, Options{GoCache: goCache(t), GoModCache: modCache}
}
