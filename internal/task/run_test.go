package task

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// This file runs tasks on the host the way the grader will in a sandbox: a fresh
// copy of repo/, the patch applied with git apply, the hidden tests copied over,
// the test command with Env, a nonce and a results path, then Parse.

type runOpts struct {
	patch []byte                                    // applied with git apply; nil for none
	plant func(t *testing.T, repo string)           // runs after the patch, before the hidden tests
	env   []string                                  // extra variables, last (they win)
	after func(t *testing.T, results, nonce string) // runs just before the test command
}

type runResult struct {
	out  Output
	res  Results
	err  error // from Parse
	repo string
	log  string // stdout and stderr, for failure messages
}

func needTools(t testing.TB, lang Language) {
	t.Helper()
	tools := []string{"git"}
	switch lang {
	case Python:
		tools = append(tools, "python3")
	case Go:
		tools = append(tools, "go")
	}
	for _, tool := range tools {
		_, err := exec.LookPath(tool)
		testenv.Require(t, err == nil, "needs "+tool+" on PATH")
	}
}

// hostGOCACHE is the test process's own (warm) build cache. A cold cache costs
// ~40 s of CPU to build the standard library for go test; the grader must use a
// private copy of a trusted warm cache instead (see the package documentation).
var hostGOCACHE = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

func runTask(t *testing.T, tk *Task, o runOpts) runResult {
	t.Helper()
	needTools(t, tk.Language)
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	copyTree(t, tk.Repo, repo)
	if o.patch != nil {
		gitApply(t, repo, o.patch)
	}
	if o.plant != nil {
		o.plant(t, repo)
	}
	copyTree(t, tk.Hidden, repo)

	nonce := NewNonce()
	results := filepath.Join(work, "results.xml")
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// The sandbox's PATH: a native framework (pytest) comes from the system's python3.
	env := []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "TMPDIR=" + tmp}
	env = append(env, tk.Env(filepath.Join(work, "scratch"))...)
	if c := hostGOCACHE(); c != "" && tk.Language == Go {
		env = append(env, "GOCACHE="+c)
	}
	env = append(env, EnvResults+"="+results, EnvNonce+"="+nonce)
	env = append(env, o.env...)
	if o.after != nil {
		o.after(t, results, nonce)
	}

	ctx, cancel := context.WithTimeout(t.Context(), tk.Limits.Timeout)
	defer cancel()
	argv := slices.Clone(tk.TestCommand)
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], ResultsVar, results)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = repo
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r runResult
	r.repo = repo
	r.out = Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if tk.Witnessed {
		r.out.Nonce = nonce
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.out.ExitCode = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", tk.TestCommand, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v timed out after %v", tk.TestCommand, tk.Limits.Timeout)
	}
	if data, err := os.ReadFile(results); err == nil {
		r.out.ResultsFile = data
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	r.log = tail(stdout.String()+"\n"+stderr.String(), 4000)
	r.res, r.err = Parse(tk.ResultFormat, r.out)
	return r
}

// outcome is the outcome of id in any of its forms (Results.Find).
func (r runResult) outcome(id string) Outcome { return r.res.Find([]string{id})[id] }

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// gitApply applies patch in dir with git apply, as the brief for graders says.
// GIT_CEILING_DIRECTORIES keeps git from finding a repository above dir.
func gitApply(t *testing.T, dir string, patch []byte) {
	t.Helper()
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(patch)
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
}

// copyTree copies src over dst, replacing (never following) whatever is at the
// destination paths.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			if fi, err := os.Lstat(to); err == nil && !fi.IsDir() {
				if err := os.Remove(to); err != nil {
					return err
				}
			}
			return os.MkdirAll(to, 0o755)
		}
		if err := os.RemoveAll(to); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
