package grade

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress/egresstest"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRealRowInEnvironment grades the row of testdata/real/environment, a real
// fix of google/go-querystring (commit 934da17, its parent the base) whose
// tests import go-cmp, in the environment its specs entry builds: the host's
// Go, then a go_modules step fetching the go.sum's modules through the Go
// module proxy into the template. The grade is offline (the task grants no
// network, GOPROXY is off): the gold patch resolves the row, the empty patch
// does not, and the same row without its environment (the host's root, no
// module cache) does not build. A sandbox on the template reaches no module
// proxy; a second build is fully cached. The proxy may sit behind a TLS
// interceptor on a reserved address (this machine's does): the build allows
// the addresses it resolves to, and the host base's bundle trusts it.
func TestRealRowInEnvironment(t *testing.T) {
	testenv.SkipShort(t, "fetches go-cmp from the Go module proxy and grades a real row three times")
	testenv.RequireRoot(t)
	_, err := exec.LookPath("git")
	testenv.Require(t, err == nil, "needs git")
	_, err = os.Stat("/usr/local/go/bin/go")
	testenv.Require(t, err == nil, "Go in /usr/local/go, which the row's spec puts in PATH")
	dir, err := filepath.Abs(filepath.Join("testdata", "real", "environment"))
	if err != nil {
		t.Fatal(err)
	}
	repos := t.TempDir()
	cmd := exec.Command("git", "clone", "-q", filepath.Join(dir, "google__go-querystring.bundle"), filepath.Join(repos, "google__go-querystring"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + repos, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	specs, err := task.ReadSpecsFile(filepath.Join(dir, "specs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := os.Open(filepath.Join(dir, "rows.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	done, err := task.ImportSWEBench(t.Context(), rows, task.ImportOptions{OutDir: t.TempDir(), Repos: repos, Specs: specs})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(done[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Environment.Spec == nil || tk.Network != nil {
		t.Fatalf("imported row: environment %+v, network %+v; want an embedded spec and no network", tk.Environment, tk.Network)
	}
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}

	store, err := image.OpenStore(filepath.Join(t.TempDir(), "image"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	allow := egresstest.ReservedPrefixes(t, "proxy.golang.org")
	var cold, cached bytes.Buffer
	start := time.Now()
	name, err := tk.Environment.Ensure(t.Context(), store, &sandbox.BuildRunner{Output: &cold, AllowPrivate: allow}, &cold)
	if err != nil {
		t.Fatalf("%v\n%s", err, cold.String())
	}
	coldT := time.Since(start)
	start = time.Now()
	if _, err := tk.Environment.Ensure(t.Context(), store, &sandbox.BuildRunner{Output: &cached}, &cached); err != nil {
		t.Fatal(err)
	}
	cachedT := time.Since(start)
	if !strings.Contains(cold.String(), "step 1/1 go_modules") || !strings.Contains(cold.String(), "(cached false)") ||
		strings.Count(cached.String(), "(cached true)") != 1 || strings.Contains(cached.String(), "(cached false)") {
		t.Fatalf("want the step built once, then cached:\n%s---\n%s", cold.String(), cached.String())
	}

	m, err := env.NewManager(env.Config{StateDir: t.TempDir(), Images: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close the environment manager: %v", err)
		}
	})
	o := Options{GoCache: goCache(t)}
	start = time.Now()
	gold := gradeIt(t, m, tk, ref, o)
	goldT := time.Since(start)
	if !gold.Resolved || len(gold.FailToPass.Passed) != 1 || len(gold.PassToPass.Passed) != len(tk.PassToPass) || gold.Canaries == 0 {
		t.Errorf("gold patch: want resolved, every test passed, canaries in: %s", dump(gold))
	}
	empty := gradeIt(t, m, tk, nil, o)
	if empty.Resolved || len(empty.FailToPass.Failed) != 1 || len(empty.PassToPass.Passed) != len(tk.PassToPass) {
		t.Errorf("empty patch: want fail_to_pass failed and pass_to_pass passed: %s", dump(empty))
	}
	// Without its environment the row's tests do not build: go-cmp comes from
	// the template, not from the host.
	bare := *tk
	bare.Environment = task.Environment{}
	hostOpts := o
	hostOpts.LogFile = filepath.Join(t.TempDir(), "grade.log")
	onHost := gradeIt(t, m, &bare, ref, hostOpts)
	log, _ := os.ReadFile(hostOpts.LogFile)
	if onHost.Resolved || len(onHost.FailToPass.Passed) > 0 || !bytes.Contains(log, []byte("github.com/google/go-cmp")) {
		t.Errorf("gold patch on the host's root: want nothing passed, go-cmp missing: %s\n%s", dump(onHost), log)
	}

	// A sandbox on the template, as the grader makes it, is offline: the module
	// proxy the build reached is out of its reach.
	info, err := m.Create(t.Context(), env.CreateOptions{Owner: owner, Workspace: tk.Repo, Template: name})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Destroy(t.Context(), owner, info.ID)
	res, err := m.Exec(t.Context(), owner, info.ID, env.ExecRequest{Timeout: 2 * time.Minute, Cwd: "/workspace",
		Env:  []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "GOPROXY=https://proxy.golang.org", "GOMODCACHE=/tmp/mod", "GOCACHE=/tmp/cache"},
		Argv: []string{"sh", "-c", "ls -d /root/go/pkg/mod/github.com/google/go-cmp@v0.5.6 && go mod download golang.org/x/text@v0.14.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitStatus() == 0 || !strings.Contains(res.Stdout, "go-cmp@v0.5.6") || !strings.Contains(res.Stderr, "proxy.golang.org") {
		t.Errorf("on the template: want go-cmp in its module cache and the proxy unreachable; exit %d, stdout %q, stderr %q", res.ExitStatus(), res.Stdout, res.Stderr)
	}
	t.Logf("%s on %s: build cold %v, cached %v; gold %s in %v, empty %s; gold on the host's root %s",
		tk.ID, name, coldT.Round(100*time.Millisecond), cachedT.Round(time.Millisecond), gold.Outcome, goldT.Round(100*time.Millisecond),
		empty.Outcome, onHost.Outcome)
}
