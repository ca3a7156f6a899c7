package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/task"
)

type gradeOptions struct {
	taskDir, patch string
	oracle         bool
	predictions    string
	parallel       int
	out            string
	suite          suiteOptions
	env            taskEnvFlags
	json           bool
	reruns         int
	seed           int64
	strict         bool
	logFile        string
	isolation      runner.Isolation
}

func gradeCmd() *cobra.Command {
	o := &gradeOptions{}
	cmd := &cobra.Command{
		Use:   "grade --task DIR --patch FILE [--json] | grade --oracle [--suite builtin|DIR|FILE.jsonl] | grade --predictions FILE.jsonl --suite DIR|FILE.jsonl",
		Short: "Grade a patch against a task in fresh sandboxes, with its hidden tests",
		Long: `Grade decides whether a patch resolves a task without asking whoever wrote it.
A patch touching a protected path (tests, test configuration, conftest.py,
sitecustomize.py, *.pth, *_test.go, testdata/, .git/, CI files, go.mod, ...) is
graded tampered, naming the paths. Otherwise it is applied to a pristine copy of
the task's repository in a fresh sandbox with no network (strictly; if that
fails, with recounted hunk headers, offsets and whitespace-insensitive matching,
reported as "fuzzy"), the hidden tests are copied in only then, the test command
runs under the task's limits with a fresh nonce, and the results are parsed and
cross-checked with its exit status. The built-in tasks are judged out of process:
the checks never share a process with the code under test, and draw their inputs
from a seed that is fresh for every grade and printed with the verdict (--seed
reproduces a grade).

Tasks imported from a real repository run the project's own framework (pytest
with its --junitxml report, python -m unittest -v, go test -json, node --test, or
a given command reporting JUnit XML, TAP or go-test JSON): see agentbox import.
A fail_to_pass or pass_to_pass id that never ran is "missing", not "failed".
A task's environment: names a template of --state-dir's store or embeds a
build spec, built there first (cached after its first build) with template
build's --allow-private and --ca-file; the grader runs on it.
The verdict's outcome is one of resolved, unresolved, tampered, harness_error
(the task's suite could not run: its setup failed, it reported no test, or none
of the task's ids) and infra_error (agentbox failed).

--oracle grades every task of --suite with its reference solution (which must
resolve it) and with the empty patch (which must not), leading with the ids a
reference left missing.

--predictions grades SWE-bench predictions (JSONL: instance_id,
model_name_or_path, model_patch) against the tasks of --suite by instance id,
--parallel at once, and writes a report (report.json, report.md, report.html)
and each prediction's grade.json, patch.diff and test.log under --out.

Exit status: 0 resolved (--oracle: every check held; --predictions: every
prediction was graded), 1 not resolved or tampered (--oracle: a check failed;
--predictions: an infra_error), 125 the grader could not grade (infra_error, bad
flags).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return gradeMain(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.taskDir, "task", "", "task directory (holding task.yaml)")
	f.StringVar(&o.patch, "patch", "", "the patch to grade, a unified or git diff (- for standard input; an empty file is the empty patch)")
	f.BoolVar(&o.oracle, "oracle", false, "check every task of --suite: its reference resolves it, the empty patch does not")
	f.StringVar(&o.predictions, "predictions", "", "grade the SWE-bench predictions in this JSONL file against --suite")
	f.IntVar(&o.parallel, "parallel", min(runtime.NumCPU(), 4), "--predictions: predictions graded at once")
	f.StringVar(&o.out, "out", "", "--predictions: results directory (default grade-results/<UTC time>)")
	o.suite.flags(f)
	o.env.add(f)
	f.BoolVar(&o.json, "json", false, "print the verdict (--oracle: every verdict) as JSON")
	f.Var(isolationValue{&o.isolation}, "isolation", isolationUsage)
	f.IntVar(&o.reruns, "reruns", 0, "run the tests this many more times to find flaky ones")
	f.Int64Var(&o.seed, "seed", 0, "draw the judge's random inputs from this seed (a verdict's seed reproduces its grade); 0: a fresh one")
	f.BoolVar(&o.strict, "strict-apply", false, "no fallbacks: a patch that does not apply exactly is not applied")
	f.StringVar(&o.logFile, "log", "", "write the setup and test commands' output here")
	return cmd
}

func gradeMain(ctx context.Context, o *gradeOptions) error {
	bulk := o.oracle || o.predictions != ""
	switch {
	case o.oracle && o.predictions != "":
		return errors.New("give --oracle or --predictions, not both")
	case bulk && (o.taskDir != "" || o.patch != ""):
		return errors.New("--oracle and --predictions grade a suite: give --suite, not --task or --patch")
	case !bulk && (o.taskDir == "" || o.patch == ""):
		return errors.New("give --task DIR and --patch FILE (or --oracle, or --predictions FILE)")
	case o.parallel < 1:
		return fmt.Errorf("--parallel %d: must be 1 or more", o.parallel)
	case o.reruns < 0:
		return fmt.Errorf("--reruns %d: must be 0 or more", o.reruns)
	case o.seed < 0:
		return fmt.Errorf("--seed %d: must be positive (0: a fresh seed)", o.seed)
	}
	runner, err := o.env.build.runner()
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	tmp, err := os.MkdirTemp("", "agentbox-grade-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var tasks []*task.Task
	var patch []byte
	var preds []prediction
	if o.predictions != "" {
		if preds, err = readPredictions(o.predictions); err != nil {
			return err
		}
	}
	if bulk {
		tasks, err = o.suite.load(ctx, tmp)
	} else {
		var t *task.Task
		if t, err = task.Load(o.taskDir); err == nil {
			tasks = []*task.Task{t}
			patch, err = readPatch(o.patch)
		}
	}
	if err != nil {
		return err
	}
	svc, closeSvc, err := newLocalEnv(o.env.stateDir, o.isolation)
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
	cache, err := goCacheFor(ctx, svc, o.suite.goCache, modCache, tasks, say)
	if err != nil {
		return err
	}
	gopts := grade.Options{GoCache: cache, GoModCache: modCache, Reruns: o.reruns, Seed: o.seed, StrictApply: o.strict, LogFile: o.logFile}
	owner := env.Owner{Tenant: "local", Task: "grade"}
	if !bulk {
		v, err := grade.Grade(ctx, svc, owner, tasks[0], patch, gopts)
		if err != nil {
			return err
		}
		if err := printVerdict(stdout, o.json, v); err != nil {
			return err
		}
		return verdictStatus(v)
	}
	if o.predictions != "" {
		return gradePredictions(ctx, svc, owner, tasks, preds, gopts, o)
	}
	return oracle(ctx, svc, owner, tasks, gopts, o.json)
}

func readPatch(name string) ([]byte, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20+1))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("--patch: %w", err)
	}
	if len(b) > 64<<20 {
		return nil, errors.New("--patch: larger than 64 MiB")
	}
	return b, nil
}

func verdictStatus(v grade.Verdict) error {
	switch {
	case v.InfraError != "":
		return exitError{125}
	case !v.Resolved:
		return exitError{1}
	}
	return nil
}

func printVerdict(w io.Writer, asJSON bool, v grade.Verdict) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "outcome:\t%s\n", v.Outcome)
	if v.HarnessError != "" {
		fmt.Fprintf(tw, "harness_error:\t%s\n", v.HarnessError)
	}
	fmt.Fprintf(tw, "resolved:\t%v\n", v.Resolved)
	fmt.Fprintf(tw, "tampered:\t%v", v.Tampered)
	if v.Tampered {
		fmt.Fprintf(tw, " (%s: %s)", v.TamperReason, strings.Join(v.TamperPaths, ", "))
	}
	fmt.Fprintf(tw, "\npatch applied:\t%v", v.PatchApplied)
	if v.ApplyMethod != "" {
		fmt.Fprintf(tw, " (%s)", v.ApplyMethod)
	}
	fmt.Fprintln(tw)
	for _, n := range v.ApplyNotes {
		fmt.Fprintf(tw, "  apply:\t%s\n", n)
	}
	for _, g := range []struct {
		name string
		s    grade.Split
	}{{"fail_to_pass", v.FailToPass}, {"pass_to_pass", v.PassToPass}} {
		fmt.Fprintf(tw, "%s:\t%d/%d passed", g.name, len(g.s.Passed), len(g.s.Passed)+len(g.s.Failed)+len(g.s.Missing))
		if len(g.s.Missing) > 0 {
			fmt.Fprintf(tw, ", %d missing (never ran)", len(g.s.Missing))
		}
		fmt.Fprintln(tw)
		for _, id := range g.s.Missing {
			fmt.Fprintf(tw, "  missing:\t%s\n", id)
		}
		for _, id := range g.s.Failed {
			fmt.Fprintf(tw, "  failed:\t%s\n", id)
		}
	}
	fmt.Fprintf(tw, "seed:\t%d\n", v.Seed)
	if v.Runs > 1 {
		fmt.Fprintf(tw, "runs:\t%d, flaky: %s\n", v.Runs, orNone(v.Flaky))
	}
	for _, p := range v.Problems {
		fmt.Fprintf(tw, "problem:\t%s\n", p)
	}
	if v.InfraError != "" {
		fmt.Fprintf(tw, "infra_error:\t%s\n", v.InfraError)
	}
	if v.Logs != "" {
		fmt.Fprintf(tw, "logs:\t%s\n", v.Logs)
	}
	fmt.Fprintf(tw, "duration:\t%s\n", (time.Duration(v.DurationMS) * time.Millisecond).String())
	return tw.Flush()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// oracle prints grade.Oracle's checks as a table as they come, or as JSON at the
// end; any failed check is exit status 1.
func oracle(ctx context.Context, svc grade.Service, owner env.Owner, tasks []*task.Task, gopts grade.Options, asJSON bool) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	var row func(grade.OracleResult)
	if !asJSON {
		fmt.Fprintln(tw, "TASK\tREFERENCE\tEMPTY PATCH\tCHECK\tTIME")
		row = func(r grade.OracleResult) {
			check := "ok"
			if !r.OK {
				check = "FAILED: " + r.Problem
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Task, r.Reference.Outcome, r.Empty.Outcome, check, r.Duration.Round(10*time.Millisecond))
			tw.Flush()
		}
	}
	results, err := grade.Oracle(ctx, svc, owner, tasks, gopts, row)
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(tw, "oracle: %d/%d tasks ok\n", len(tasks)-failed, len(tasks))
		tw.Flush()
	}
	if failed > 0 {
		return exitError{1}
	}
	return nil
}
