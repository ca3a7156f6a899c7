package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/task"
)

// PolicyFunc returns a fresh policy for one attempt at a task, and the strings
// (API keys) its trace must never hold.
type PolicyFunc func(t *task.Task) (agent.Policy, []string, error)

// Service is what a run calls: the agents' environments and tools, the
// grader's, and (for an external agent) all an API server serves.
type Service interface {
	env.Service
}

// Options describe one evaluation run. Service, Tasks, Policy and Out are
// required; the rest have safe defaults.
type Options struct {
	Service Service
	Owner   env.Owner // tenant "local" when empty; Task is set per attempt
	Tasks   []*task.Task
	// Suite, PolicyName and Model label the report.
	Suite, PolicyName, Model string
	Policy                   PolicyFunc
	// AgentCmd, when set, is the agent instead of Policy: a program (argv) run
	// per attempt on this side of the sandbox, told its task and given an API
	// and MCP endpoint reaching its attempt's environment alone (AgentFile). It
	// gets AgentEnv as its whole environment (plus the AGENTBOX_ variables), so
	// nothing of the coordinator's (a model key) reaches it unless put there.
	AgentCmd []string
	AgentEnv []string
	// Attempts per task (default 1) and attempts run at once (default 1).
	Attempts, Parallel int
	// Out is the results directory. A directory holding another run is refused
	// unless Resume is set, which continues that run: attempts already recorded
	// are skipped.
	Out    string
	Resume bool
	// Flags are the settings that shape the run (the command line's flags and
	// their values), recorded in run.json: a resumed run must give the same, or
	// it is refused naming the ones that differ.
	Flags map[string]string
	// Isolation is the level of the Service's environments, recorded in the
	// report (the Service decides it).
	Isolation string
	// Limits bound each agent session; MaxWall defaults to the task's timeout
	// plus five minutes.
	Limits agent.Limits
	// Permissions, if set, give every attempt's session a permission layer of its
	// own (agent.NewPermissions): its policy, approvals file and grants. Nobody is
	// there to ask, so an ask nothing answers is refused and the attempt goes on
	// unless Unanswered (or the approvals file) says grant.Stop. Egress, if set,
	// offers http.fetch through a proxy with that configuration.
	Permissions *agent.PermissionConfig
	Egress      *egress.Config
	// Grade tunes grading. LogFile is set per attempt; GoCache is set from
	// GoCache below when that is given.
	Grade grade.Options
	// GoCache, when set, is called once, by the first attempt at a Go task, for
	// the warm Go build cache directory that grading and the agents' environments
	// mount (see gocache.Warm, gocache.Mounts); other attempts run meanwhile.
	GoCache func(context.Context) (string, error)
	// Progress hears about attempts as they start and end; nil hears nothing.
	Progress Progress

	goCache func() (string, error)
}

// Progress is told how a run advances. Calls come from several goroutines.
type Progress interface {
	// Begin is called once: the attempts to run and those already done (resumed).
	Begin(total, done, resolved int)
	// Started and Finished bracket each attempt that runs.
	Started(task string, attempt int)
	Finished(a report.Attempt)
}

// runFile records the identity of the run a results directory holds.
const runFile = "run.json"

type runInfo struct {
	Run       string    `json:"run"`
	Suite     string    `json:"suite"`
	Policy    string    `json:"policy"`
	Model     string    `json:"model,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Attempts per task, and the flags of the run (Options.Flags).
	Attempts int               `json:"attempts,omitempty"`
	Flags    map[string]string `json:"flags,omitempty"`
}

// Run runs every (task, attempt) of o that the results directory does not hold
// yet, writes each attempt's files and then the reports (report.json, report.md,
// report.html), and returns the report. When ctx is cancelled it stops starting
// attempts, lets the running ones end (their environments are destroyed), records
// only the attempts that finished, and marks the report interrupted; the error is
// then ctx's.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := o.probe(ctx); err != nil {
		return nil, err
	}
	info, err := o.openOut()
	if err != nil {
		return nil, err
	}
	type key struct {
		task    *task.Task
		attempt int
	}
	var todo []key
	var done []report.Attempt
	for _, t := range o.Tasks {
		for n := 1; n <= o.Attempts; n++ {
			// Attempts the harness failed (an error, an infra error) are run again.
			if a, ok := readAttempt(o.Out, t.ID, n); ok && a.Run == info.Run && a.Error == "" && a.InfraError == "" {
				done = append(done, a.Attempt)
				continue
			}
			todo = append(todo, key{t, n})
		}
	}
	if o.GoCache != nil {
		// The first Go attempt warms the cache: let the others wait behind the
		// attempts that need no cache, not block workers in front of them.
		first := slices.IndexFunc(todo, func(k key) bool { return k.task.Language == task.Go })
		if first >= 0 {
			lead := todo[first]
			rest := slices.Delete(slices.Clone(todo), first, first+1)
			slices.SortStableFunc(rest, func(a, b key) int {
				return boolInt(a.task.Language == task.Go) - boolInt(b.task.Language == task.Go)
			})
			todo = append([]key{lead}, rest...)
		}
	}
	prog := o.Progress
	if prog == nil {
		prog = nopProgress{}
	}
	resolved := 0
	for _, a := range done {
		if a.Resolved {
			resolved++
		}
	}
	prog.Begin(len(todo)+len(done), len(done), resolved)
	if o.GoCache != nil {
		o.goCache = sync.OnceValues(func() (string, error) { return o.GoCache(ctx) })
	}

	var (
		mu      sync.Mutex
		results = done
		wg      sync.WaitGroup
		sem     = make(chan struct{}, o.Parallel)
	)
	for _, k := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			prog.Started(k.task.ID, k.attempt)
			a, ok := o.attempt(ctx, info.Run, k.task, k.attempt)
			if !ok {
				return // interrupted: not recorded, a resumed run redoes it
			}
			prog.Finished(a)
			mu.Lock()
			results = append(results, a)
			mu.Unlock()
		}()
	}
	wg.Wait()

	slices.SortFunc(results, func(a, b report.Attempt) int {
		if a.Task != b.Task {
			return taskOrder(o.Tasks, a.Task) - taskOrder(o.Tasks, b.Task)
		}
		return a.Attempt - b.Attempt
	})
	now := time.Now()
	r := &report.Report{Run: info.Run, Suite: o.Suite, Policy: o.PolicyName, Model: o.Model, Isolation: o.Isolation,
		StartedAt: info.StartedAt, FinishedAt: now, DurationMS: now.Sub(info.StartedAt).Milliseconds(),
		Interrupted: ctx.Err() != nil, Attempts: results, Summary: report.Summarize(results)}
	if err := report.Write(o.Out, r); err != nil {
		return r, fmt.Errorf("eval: write reports: %w", err)
	}
	if ctx.Err() != nil {
		return r, context.Cause(ctx)
	}
	return r, nil
}

// probe starts and destroys one empty environment, so that a host that cannot
// run sandboxes fails the run once, saying why, rather than every attempt.
func (o *Options) probe(ctx context.Context) error {
	info, err := o.Service.Create(ctx, env.CreateOptions{Owner: o.Owner,
		Labels: map[string]string{"agentbox.eval": "probe"}})
	if err != nil {
		return fmt.Errorf("eval: this host cannot start a sandbox: %w (agentbox doctor lists what is missing; on hosts with cgroup v1 only root can create them)", err)
	}
	if err := o.Service.Destroy(context.WithoutCancel(ctx), o.Owner, info.ID); err != nil {
		return fmt.Errorf("eval: destroy the probe environment: %w", err)
	}
	return nil
}

func (o *Options) check() error {
	switch {
	case o.Service == nil:
		return errors.New("eval: no environment service")
	case len(o.Tasks) == 0:
		return errors.New("eval: the suite has no task")
	case o.Policy == nil && len(o.AgentCmd) == 0:
		return errors.New("eval: no policy and no agent command")
	case o.Out == "":
		return errors.New("eval: no results directory")
	case o.Attempts < 0 || o.Parallel < 0:
		return fmt.Errorf("eval: attempts (%d) and parallel (%d) must be positive", o.Attempts, o.Parallel)
	}
	seen := map[string]bool{}
	for _, t := range o.Tasks {
		if seen[t.ID] {
			return fmt.Errorf("eval: task id %s appears twice in the suite", t.ID)
		}
		seen[t.ID] = true
	}
	if o.Owner.Tenant == "" {
		o.Owner.Tenant = "local"
	}
	if o.Attempts == 0 {
		o.Attempts = 1
	}
	if o.Parallel == 0 {
		o.Parallel = 1
	}
	return nil
}

// openOut creates the results directory, or checks that it holds the same run
// when resuming. A directory holding another run, or any files when not resuming,
// is refused: results are never mixed or overwritten.
func (o *Options) openOut() (runInfo, error) {
	path := filepath.Join(o.Out, runFile)
	if b, err := os.ReadFile(path); err == nil {
		var info runInfo
		if err := json.Unmarshal(b, &info); err != nil {
			return runInfo{}, fmt.Errorf("eval: %s: %w", path, err)
		}
		if !o.Resume {
			return runInfo{}, fmt.Errorf("eval: %s already holds run %s: give --resume to continue it, or another --out", o.Out, info.Run)
		}
		if diff := o.differences(info); len(diff) > 0 {
			return runInfo{}, fmt.Errorf("eval: %s holds run %s made with other settings: %s; resume it with the same flags, or use another --out",
				o.Out, info.Run, strings.Join(diff, "; "))
		}
		return info, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return runInfo{}, fmt.Errorf("eval: %w", err)
	}
	if o.Resume {
		return runInfo{}, fmt.Errorf("eval: --resume: %s holds no run to continue (no %s): check --out, or drop --resume to start a new run", o.Out, runFile)
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		return runInfo{}, fmt.Errorf("eval: %s is not empty and holds no run: choose an empty or new --out", o.Out)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return runInfo{}, fmt.Errorf("eval: %w", err)
	}
	info := runInfo{Run: newRunID(), Suite: o.Suite, Policy: o.PolicyName, Model: o.Model, StartedAt: time.Now().UTC(),
		Attempts: o.Attempts, Flags: o.Flags}
	if err := writeJSON(path, info); err != nil {
		return runInfo{}, fmt.Errorf("eval: %w", err)
	}
	return info, nil
}

// differences names what of the run in info o would change: its suite, policy,
// model, attempts, and every flag whose value differs (run.json files written
// before flags were recorded have none to compare).
func (o *Options) differences(info runInfo) []string {
	var diff []string
	add := func(name, was, now string) {
		if was != now {
			diff = append(diff, fmt.Sprintf("%s was %q, now %q", name, was, now))
		}
	}
	add("suite", info.Suite, o.Suite)
	add("policy", info.Policy, o.PolicyName)
	add("model", info.Model, o.Model)
	if info.Attempts != 0 {
		add("attempts", strconv.Itoa(info.Attempts), strconv.Itoa(o.Attempts))
	}
	if info.Flags != nil {
		for _, k := range slices.Sorted(maps.Keys(info.Flags)) {
			if k != "attempts" {
				add("--"+k, info.Flags[k], o.Flags[k])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(o.Flags)) {
			if _, ok := info.Flags[k]; !ok {
				add("--"+k, "", o.Flags[k])
			}
		}
	}
	return diff
}

func taskOrder(tasks []*task.Task, id string) int {
	return slices.IndexFunc(tasks, func(t *task.Task) bool { return t.ID == id })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type nopProgress struct{}

func (nopProgress) Begin(int, int, int)     {}
func (nopProgress) Started(string, int)     {}
func (nopProgress) Finished(report.Attempt) {}
