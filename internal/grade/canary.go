package grade

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/canary"
	"github.com/agentbox/agentbox/internal/task"
)

// withCanaries writes t's hidden files into dir with every hidden _test.go file
// rewritten by canary.RewriteGo (renamed tests and their canaries), for a task
// whose results come from `go test -json`, which the code under test shares. It
// returns the plan to check the results with, or nil when nothing was rewritten.
func withCanaries(t *task.Task, dir string, seed int64) (*canary.Plan, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x63616e61727921))
	var plan canary.Plan
	for _, name := range t.HiddenFiles {
		src, err := os.ReadFile(filepath.Join(t.Hidden, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		out := src
		if strings.HasSuffix(name, "_test.go") {
			rewritten, p, err := canary.RewriteGo(name, src, rng)
			if err == nil {
				out = rewritten
				plan.Merge(p)
			}
		}
		to := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(to, out, 0o644); err != nil {
			return nil, err
		}
	}
	if len(plan.Real) == 0 {
		return nil, nil
	}
	return &plan, nil
}

// checkCanaries maps res back to the hidden tests' names and returns why it is
// forged.
func checkCanaries(p *canary.Plan, res *task.Results) []string {
	in := map[string]string{}
	for id, o := range res.Tests {
		in[id] = string(o)
	}
	out, forged := canary.Check(*p, in)
	// The keys Results.Find matches ids by are remade from the ids mapped back:
	// the run's were those of the canaries' random names.
	res.Tests, res.Keys = map[string]task.Outcome{}, map[string]task.TestKey{}
	for id, o := range out {
		res.Tests[id] = task.Outcome(o)
		_, name, _ := strings.Cut(id, "::")
		res.Keys[id] = task.TestKey{Name: name}
	}
	return forged
}
