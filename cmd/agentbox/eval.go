package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/eval"
	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/task"
)

type evalOptions struct {
	agent              agentOptions // policy, model and budget flags, shared with `agent`
	suite              suiteOptions
	env                taskEnvFlags
	only               []string
	attempts, parallel int
	out                string
	resume             bool
	reruns             int
	progress           string
	agentCmd           string
	agentEnv           []string
	flags              *pflag.FlagSet
}

// agentBaseEnv are the coordinator's variables an external agent gets: what a
// program needs to start, never a credential (--agent-env adds those).
var agentBaseEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "NODE_PATH"}

// runFlags are the flags that do not shape a run's results: a resumed run may
// change them. The build flags say how the registries are reached, not what a
// spec builds.
var runFlags = []string{"out", "resume", "progress", "parallel", "allow-private", "ca-file"}

func evalCmd() *cobra.Command {
	o := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval [--suite builtin|DIR|FILE.jsonl] [--policy scripted|openai|anthropic] [flags]",
		Short: "Run an agent over a task suite and grade every attempt independently",
		Long: `Eval runs the agent on every task of the suite, --attempts times each, --parallel
at once. Each attempt gets a fresh sandboxed environment made from the task's
starting code (no network; the hidden tests are never in it); the agent works in
it with the built-in tools, its test.run running the task's public tests. Its
final diff is then graded by agentbox, not by the agent: in another fresh
environment, from a pristine copy, with the hidden acceptance tests and the
tamper check (see agentbox grade). Both run on the task's environment: a template
of --state-dir's store, or its embedded build spec built there first (cached
after the first build) with --allow-private and --ca-file, as template build's.

With no flags it runs the built-in suite (9 tasks: C01-C03, calc and J01 in
Python, G01-G03 and J02 in Go) with the scripted policy, which replays each task's reference
solution through the agent's tools: a check of the whole harness, not of an
agent. --policy openai or anthropic runs a model (see agentbox agent --help for
the model flags).

--agent-cmd 'python3 my_agent.py' runs your own agent instead, in any language:
per attempt the command runs on this host (with /bin/sh -c, in its own process
group, killed at --timeout), told its task and its one environment through
AGENTBOX_AGENT_FILE (JSON), AGENTBOX_URL, AGENTBOX_TOKEN, AGENTBOX_ENV_ID and
AGENTBOX_MCP_URL: an API server (docs/API.md) and MCP endpoint whose token reaches
that environment only. What it changed there is graded as any agent's diff. Its
environment holds PATH, HOME, the locale and the like, never the model key unless
--agent-env names it. Its output goes to agent.stdout and agent.stderr in the
attempt's directory. clients/python/examples/agent.py is a sample.

Results go to --out (default eval-results/<time>): per attempt TASK/N/ holds
trace.jsonl, events.jsonl, patch.diff, grade.json and test.log; report.json,
report.md and report.html (self-contained: open it in any browser, no network)
summarise the run. --resume continues an interrupted run in the same --out,
skipping the attempts it finished (those the harness failed, an error or an
infra_error, run again); run.json records the flags, and a resume with other
values is refused, naming them. Ctrl-C stops it, destroying every environment. A
host that cannot start a sandbox, or a model that cannot be reached (one request
of one token checks it), fails at once, before anything is written.

Every tool call of every attempt is decided by the permission policy, as in
agentbox agent (--permissions, --approvals, --grant, --allow-net). Nobody is at a
terminal, so an ask the approvals file does not answer (or every ask, without
one) is refused: the model gets EPERM with the reason and the attempt goes on,
as with a person who said no. An approvals file saying unanswered: stop ends
the attempt with policy_stop instead.

Exit status: 0 when every attempt ran (resolved or not), 1 when an attempt hit an
infrastructure error, 125 when eval could not run, 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.flags = cmd.Flags()
			return evalMain(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.suite.flags(f)
	o.env.add(f)
	f.StringSliceVar(&o.only, "tasks", nil, "run only these task ids (comma-separated)")
	f.StringVar(&o.agent.policy, "policy", "scripted", "scripted (replays each task's reference solution), openai or anthropic")
	o.agent.modelFlags(f)
	o.agent.perm.flags(f)
	f.Var(isolationValue{&o.agent.isolation}, "isolation", isolationUsage)
	f.DurationVar(&o.agent.limits.MaxWall, "timeout", 0, "wall-time budget of each attempt's session (default: the task's timeout + 5m)")
	f.IntVar(&o.attempts, "attempts", 1, "attempts per task")
	f.IntVar(&o.parallel, "parallel", min(runtime.NumCPU(), 4), "attempts run at once")
	f.StringVar(&o.out, "out", "", "results directory (default eval-results/<UTC time>)")
	f.BoolVar(&o.resume, "resume", false, "continue the run in --out, skipping finished attempts")
	f.IntVar(&o.reruns, "reruns", 0, "run each graded test suite this many more times to find flaky tests")
	f.StringVar(&o.progress, "progress", "auto", "auto (a bar on a terminal, lines otherwise), bar, lines or none")
	f.StringVar(&o.agentCmd, "agent-cmd", "", "run this external agent (a shell command) per attempt instead of --policy")
	f.StringSliceVar(&o.agentEnv, "agent-env", nil, "pass these variables (NAME or NAME=VALUE) to the --agent-cmd agent, e.g. OPENAI_API_KEY")
	return cmd
}

func evalMain(ctx context.Context, o *evalOptions) error {
	switch {
	case o.attempts < 1:
		return fmt.Errorf("--attempts %d: must be 1 or more", o.attempts)
	case o.parallel < 1:
		return fmt.Errorf("--parallel %d: must be 1 or more", o.parallel)
	case o.reruns < 0:
		return fmt.Errorf("--reruns %d: must be 0 or more", o.reruns)
	case o.resume && o.out == "":
		return errors.New("--resume needs --out, the results directory of the run to continue")
	}
	runner, err := o.env.build.runner()
	if err != nil {
		return err
	}
	policyName := "scripted:" + agent.ModeReference
	var newPolicy eval.PolicyFunc
	var agentCmd, agentEnv []string
	if o.agentCmd != "" {
		if o.flags != nil && o.flags.Changed("policy") {
			return errors.New("--agent-cmd and --policy exclude each other: the external agent is the policy")
		}
		var err error
		if agentEnv, err = externalEnv(o.agentEnv, os.LookupEnv); err != nil {
			return err
		}
		policyName, agentCmd = "external:"+o.agentCmd, []string{"/bin/sh", "-c", o.agentCmd}
	} else if len(o.agentEnv) > 0 {
		return errors.New("--agent-env is for --agent-cmd: give the external agent to run")
	} else if o.agent.policy == "scripted" {
		newPolicy = func(t *task.Task) (agent.Policy, []string, error) {
			ref, err := t.ReadReference()
			if err != nil {
				return nil, nil, err
			}
			return &agent.Scripted{Mode: agent.ModeReference, Patch: string(ref)}, nil, nil
		}
	} else {
		// Validate the flags (and find the key) once, before any environment starts.
		pol, _, err := o.agent.policyFor()
		if err != nil {
			return err
		}
		if err := preflight(ctx, pol); err != nil {
			return err
		}
		policyName = o.agent.policy
		newPolicy = func(*task.Task) (agent.Policy, []string, error) { return o.agent.policyFor() }
	}
	gc, eg, err := o.agent.perm.config()
	if err != nil {
		return err
	}
	progress, err := newProgress(o.progress)
	if err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join("eval-results", time.Now().UTC().Format("20060102T150405Z"))
	}

	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	tmp, err := os.MkdirTemp("", "agentbox-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tasks, err := o.suite.load(ctx, tmp)
	if err != nil {
		return err
	}
	if tasks, err = selectTasks(tasks, o.only); err != nil {
		return err
	}
	svc, closeSvc, err := newLocalEnv(o.env.stateDir, o.agent.isolation)
	if err != nil {
		return err
	}
	defer closeSvc()

	say := func(s string) { fmt.Fprintln(stderr, "agentbox: "+s) }
	if err := ensureEnvironments(ctx, o.env.stateDir, runner, tasks, say); err != nil {
		return err
	}
	modCache, err := o.suite.goModCacheFor(ctx, tasks, say)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("eval: %d tasks x %d attempts, policy %s, %d at once, results in %s", len(tasks), o.attempts, policyName, o.parallel, o.out))
	r, err := eval.Run(ctx, eval.Options{
		Service: svc, Owner: env.Owner{Tenant: "local"}, Tasks: tasks,
		Suite: o.suite.suite, PolicyName: policyName, Model: o.agent.model, Policy: newPolicy,
		AgentCmd: agentCmd, AgentEnv: agentEnv, Flags: shapingFlags(o), Isolation: isolationValue{&o.agent.isolation}.String(),
		Attempts: o.attempts, Parallel: o.parallel, Out: o.out, Resume: o.resume,
		Limits: o.agent.limits, Permissions: &gc, Egress: eg, Grade: grade.Options{Reruns: o.reruns, GoModCache: modCache},
		GoCache: func(ctx context.Context) (string, error) {
			return goCacheFor(ctx, svc, o.suite.goCache, modCache, tasks, say)
		},
		Progress: progress,
	})
	if b, ok := progress.(*eval.Bar); ok {
		b.Wait()
	}
	if r != nil {
		fmt.Fprintln(stdout)
		report.Table(stdout, r)
		fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(o.out, "report.html"))
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "agentbox: eval interrupted; continue with: agentbox eval --resume --out %s (and the same flags)\n", o.out)
			return exitError{130}
		}
		return err
	}
	if r.Summary.InfraErrors > 0 {
		return exitError{1}
	}
	return nil
}

func newProgress(mode string) (eval.Progress, error) {
	switch mode {
	case "auto":
		if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return eval.NewBar(os.Stderr), nil
		}
		return eval.NewLines(stderr), nil
	case "bar":
		return eval.NewBar(os.Stderr), nil
	case "lines":
		return eval.NewLines(stderr), nil
	case "none":
		return nil, nil
	}
	return nil, fmt.Errorf("--progress %q: use auto, bar, lines or none", mode)
}

// selectTasks keeps the tasks named in ids, in suite order; none named keeps all.
func selectTasks(tasks []*task.Task, ids []string) ([]*task.Task, error) {
	if len(ids) == 0 {
		return tasks, nil
	}
	var out []*task.Task
	for _, id := range ids {
		i := slices.IndexFunc(tasks, func(t *task.Task) bool { return t.ID == id })
		if i < 0 {
			var all []string
			for _, t := range tasks {
				all = append(all, t.ID)
			}
			return nil, fmt.Errorf("--tasks: no task %q in the suite (it has %s)", id, strings.Join(all, ", "))
		}
		if !slices.Contains(out, tasks[i]) {
			out = append(out, tasks[i])
		}
	}
	slices.SortFunc(out, func(a, b *task.Task) int { return slices.Index(tasks, a) - slices.Index(tasks, b) })
	return out, nil
}

// externalEnv is the environment of an external agent: agentBaseEnv's variables
// that are set, and those --agent-env names (NAME, from ours; or NAME=VALUE).
func externalEnv(names []string, lookup func(string) (string, bool)) ([]string, error) {
	var out []string
	for _, k := range agentBaseEnv {
		if v, ok := lookup(k); ok {
			out = append(out, k+"="+v)
		}
	}
	for _, n := range names {
		if k, _, ok := strings.Cut(n, "="); ok {
			if k == "" {
				return nil, fmt.Errorf("--agent-env %q: give NAME or NAME=VALUE", n)
			}
			out = append(out, n)
			continue
		}
		v, ok := lookup(n)
		if !ok {
			return nil, fmt.Errorf("--agent-env %s: not set in this environment (give %s=VALUE to set it)", n, n)
		}
		out = append(out, n+"="+v)
	}
	return out, nil
}

// shapingFlags are the values of every flag that shapes the run's results, for
// run.json: a resumed run must give the same.
func shapingFlags(o *evalOptions) map[string]string {
	f := o.flags
	if f == nil {
		return nil
	}
	out := map[string]string{}
	f.VisitAll(func(fl *pflag.Flag) {
		switch {
		case slices.Contains(runFlags, fl.Name):
		case fl.Name == "agent-env":
			// NAME=VALUE may hold a secret: run.json keeps the names.
			var names []string
			for _, v := range o.agentEnv {
				k, _, _ := strings.Cut(v, "=")
				names = append(names, k)
			}
			out[fl.Name] = strings.Join(names, ",")
		default:
			out[fl.Name] = fl.Value.String()
		}
	})
	return out
}

// preflight asks a model policy's model for one token, so that a model that
// cannot be reached (no key, no route, a refused key) fails the run before any
// environment starts, rather than every attempt.
func preflight(ctx context.Context, p agent.Policy) error {
	mp, ok := p.(*agent.ModelPolicy)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := mp.Client.Complete(ctx, model.Request{Model: mp.Model, MaxOutputTokens: 1,
		Messages: []model.Message{{Role: model.RoleUser, Text: "Reply with OK."}}})
	if err != nil {
		return fmt.Errorf("eval: the model %s (%s) cannot be reached, so no attempt would run: %w (check --base-url, --model and the API key)", mp.Model, mp.Label, err)
	}
	return nil
}
