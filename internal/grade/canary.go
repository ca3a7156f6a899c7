package grade

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/canary"
	"github.com/agentbox/agentbox/internal/task"
)

// canaries are the two copies of a task's hidden files that a grade runs, each
// in an environment of its own, and how to read their results back (package
// canary): every covered hidden test is a canary in one copy and itself in the
// other, so that no run holds a test and its canary together.
type canaries struct {
	dirs [2]string    // the copies of the hidden files
	n    int          // the hidden tests with a canary
	goP  *canary.Plan // for go test -json
	pyP  *canary.PyPlan
}

// newCanaries writes the two copies of t's hidden files under dir, for a task
// whose results come from a framework that the code under test shares: `go test
// -json` (every hidden _test.go file, canary.RewriteGo) or pytest and unittest
// (every hidden test module, canary.RewritePython, parsed by the python3 found
// on path). It returns nil when no hidden test got a canary. Which copy holds
// which canary is drawn from a secret seed of its own, never the judge's
// (AGENTBOX_SEED, which the code under test can read and replay the draws
// with).
func newCanaries(ctx context.Context, t *task.Task, dir, path string) (*canaries, error) {
	var test func(string) bool
	switch {
	case t.ResultFormat == task.GoTestJSON:
		test = func(name string) bool { return strings.HasSuffix(name, "_test.go") }
	case t.Language == task.Python && !t.Witnessed && (t.ResultFormat == task.JUnit || t.ResultFormat == task.Unittest):
		test = canary.PythonTestFile
	default:
		return nil, nil
	}
	var key [32]byte
	crand.Read(key[:])
	rng := rand.New(rand.NewChaCha8(key))
	c := &canaries{dirs: [2]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}}
	copies := [2]map[string][]byte{{}, {}}
	tests := map[string][]byte{}
	for _, name := range t.HiddenFiles {
		src, err := os.ReadFile(filepath.Join(t.Hidden, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		copies[0][name], copies[1][name] = src, src
		if test(name) {
			tests[name] = src
		}
	}
	switch t.ResultFormat {
	case task.GoTestJSON:
		var plan canary.Plan
		for _, name := range slices.Sorted(maps.Keys(tests)) {
			out, p, err := canary.RewriteGo(name, tests[name], rng)
			if err == nil {
				copies[0][name], copies[1][name] = out[0], out[1]
				plan.Merge(p)
			}
		}
		if len(plan.Canary) == 0 {
			return nil, nil
		}
		c.goP, c.n = &plan, len(plan.Canary)
	default:
		if len(tests) == 0 {
			return nil, nil
		}
		python, err := exec.LookPath(pathLookup(path, "python3"))
		if err != nil {
			return nil, fmt.Errorf("no python3 on the graded PATH to write the canaries with: %w", err)
		}
		out, plan, err := canary.RewritePython(ctx, python, tests, rng)
		if err != nil {
			return nil, err
		}
		if len(plan.Canary[0])+len(plan.Canary[1]) == 0 {
			return nil, nil
		}
		for i := range 2 {
			maps.Copy(copies[i], out[i])
		}
		c.pyP, c.n = &plan, len(plan.Canary[0])+len(plan.Canary[1])
	}
	for i, files := range copies {
		for name, data := range files {
			to := filepath.Join(c.dirs[i], filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(to, data, 0o644); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// pathLookup returns the first dir/name of path's directories that exists, or
// name.
func pathLookup(path, name string) string {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return name
}

// check reads the results of both copies' runs back: each hidden test under
// its original name, the canaries left out, and why the results are forged.
func (c *canaries) check(runs [2]task.Results) (task.Results, []string) {
	if c.goP != nil {
		in := map[string]string{}
		for _, r := range runs {
			for id, o := range r.Tests {
				if prev, ok := in[id]; !ok || o.Worse(task.Outcome(prev)) {
					in[id] = string(o) // a public test runs in both copies
				}
			}
		}
		out, forged := canary.Check(*c.goP, in)
		// The keys Results.Find matches ids by are remade from the ids mapped back:
		// the run's were those of the random names.
		res := task.Results{Tests: map[string]task.Outcome{}, Keys: map[string]task.TestKey{}}
		for id, o := range out {
			res.Tests[id] = task.Outcome(o)
			_, name, _ := strings.Cut(id, "::")
			res.Keys[id] = task.TestKey{Name: name}
		}
		return res, forged
	}
	var in [2]map[string]canary.PyResult
	for i, r := range runs {
		in[i] = map[string]canary.PyResult{}
		for id, o := range r.Tests {
			k := r.Keys[id]
			in[i][id] = canary.PyResult{Class: k.Class, Name: k.Name, Outcome: string(o)}
		}
	}
	out, forged := canary.CheckPython(*c.pyP, in)
	res := task.Results{Tests: map[string]task.Outcome{}, Keys: map[string]task.TestKey{}}
	for i := range 2 {
		for id := range out[i] {
			o := runs[i].Tests[id]
			if prev, ok := res.Tests[id]; !ok || o.Worse(prev) {
				res.Tests[id] = o
			}
			res.Keys[id] = runs[i].Keys[id]
		}
	}
	return res, forged
}
