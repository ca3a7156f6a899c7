package grade

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/gocache"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Service is the part of the environment service the grader calls: it makes an
// environment from the pristine repository (with the shared Go caches mounted),
// applies the patch, copies the hidden tests in, runs the commands, and reads
// their results.
type Service interface {
	Create(ctx context.Context, o env.CreateOptions) (env.Info, error)
	Destroy(ctx context.Context, owner env.Owner, id string) error
	Exec(ctx context.Context, owner env.Owner, id string, r env.ExecRequest) (*runner.Result, error)
	ReadFile(ctx context.Context, owner env.Owner, id, path string, offset, length int64) ([]byte, error)
	ListDir(ctx context.Context, owner env.Owner, id, path string) ([]workspace.Entry, error)
	Mkdir(ctx context.Context, owner env.Owner, id, path string) error
	Remove(ctx context.Context, owner env.Owner, id, path string) error
	Upload(ctx context.Context, owner env.Owner, id, path string, r io.Reader) error
	ApplyPatch(ctx context.Context, owner env.Owner, id string, patch []byte) (workspace.PatchReport, error)
	ReadArtifact(ctx context.Context, owner env.Owner, ref string, offset, length int64) ([]byte, env.Artifact, error)
	// SetNetwork closes a task's setup network before its tests (task.Task.Network).
	SetNetwork(ctx context.Context, owner env.Owner, id string, n env.Network) error
}

// Grade grades patch against t: each run (the first and Options.Reruns more) in a
// fresh environment of svc owned by owner, made from the pristine repository. A
// patch touching a protected path is graded tampered without running anything.
// Every environment is destroyed. The error is non-nil only for a caller mistake
// (nil task or service); every other failure is in the Verdict.
func Grade(ctx context.Context, svc Service, owner env.Owner, t *task.Task, patch []byte, opts Options) (Verdict, error) {
	if svc == nil || t == nil {
		return Verdict{}, errors.New("grade: nil service or task")
	}
	start := time.Now()
	v := grade(ctx, svc, owner, t, patch, opts.withDefaults())
	v.Outcome = v.classify()
	v.DurationMS = time.Since(start).Milliseconds()
	return v, nil
}

func grade(ctx context.Context, svc Service, owner env.Owner, t *task.Task, patch []byte, o Options) Verdict {
	v := Verdict{FailToPass: Split{Failed: slices.Clone(t.FailToPass)}, PassToPass: Split{Failed: slices.Clone(t.PassToPass)}, Seed: o.Seed}
	if v.Seed <= 0 {
		v.Seed = newSeed()
	}
	empty := len(bytes.TrimSpace(patch)) == 0
	var paths []string
	if !empty {
		var err error
		if paths, err = touched(patch); err != nil {
			// A hand- or model-written patch often miscounts its hunks' lines.
			fixed, n := recount(patch)
			if o.StrictApply || n == 0 {
				v.Problems = append(v.Problems, err.Error())
				return v
			}
			if paths, err = touched(fixed); err != nil {
				v.Problems = append(v.Problems, err.Error())
				return v
			}
			patch = fixed
			v.ApplyNotes = append(v.ApplyNotes, fmt.Sprintf("recounted the line counts of %d hunk headers", n))
		}
		if len(paths) == 0 {
			v.Problems = append(v.Problems, "patch names no file")
			return v
		}
		if hits := tampered(t, paths); len(hits) > 0 {
			v.Tampered, v.TamperReason, v.TamperPaths = true, TamperProtected, hits
			return v
		}
	}

	r := &run{svc: svc, owner: owner, t: t, o: o, seed: v.Seed, paths: paths}
	if !empty {
		r.patch = patch
	}
	if !o.NoCanaries {
		dir, err := os.MkdirTemp("", "agentbox-canary-")
		if err != nil {
			v.InfraError = fmt.Sprintf("canaries: %v", err)
			return v
		}
		defer os.RemoveAll(dir)
		if r.canaries, err = newCanaries(ctx, t, dir, o.Path); err != nil {
			v.InfraError = fmt.Sprintf("canaries: %v", err)
			return v
		}
		if r.canaries != nil {
			v.Canaries = r.canaries.n
		}
	}
	if o.LogFile != "" {
		f, err := os.OpenFile(o.LogFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			v.InfraError = fmt.Sprintf("open test log: %v", err)
			return v
		}
		defer f.Close()
		r.log, v.Logs = f, o.LogFile
	}

	var runs []task.Results
	for i := 0; i <= o.Reruns; i++ {
		res, fail := r.pass(ctx, &v)
		if fail != nil {
			if len(r.forged) > 0 {
				v.Tampered, v.Forged = true, r.forged
			}
			// A run after the first that fails for its own reasons cannot make the
			// verdict better: the runs before it decide when they resolve nothing
			// (nothing a run leaves behind reaches the next, which starts afresh).
			if i > 0 && !v.Tampered && !resolves(t, merged(runs)) {
				v.Problems = append(v.Problems, fmt.Sprintf("rerun %d: %s (the runs before it already do not resolve the task)", i, fail.msg))
				break
			}
			if i > 0 {
				fail.msg = fmt.Sprintf("rerun %d: %s", i, fail.msg)
			}
			fail.record(&v)
			if fail.kind == "harness" && r.patch != nil {
				patchFault(ctx, r, &v)
			}
			return v
		}
		runs = append(runs, res)
	}
	if len(r.forged) > 0 {
		v.Tampered, v.Forged = true, r.forged
		v.Problems = append(v.Problems, "the results are forged: "+r.forged[0])
	}
	res, flaky := merge(runs)
	v.Runs, v.Flaky = len(runs), flaky
	found := res.Find(slices.Concat(t.FailToPass, t.PassToPass))
	v.FailToPass = split(found, t.FailToPass)
	v.PassToPass = split(found, t.PassToPass)
	switch {
	case len(res.Tests) == 0:
		v.HarnessError = "the suite reported no test: it could not be collected or run (see the test log)"
	case len(found) == 0:
		v.HarnessError = fmt.Sprintf("none of the task's %d test ids is among the %d tests the suite reported: the ids do not map onto what the framework reports (first reported: %s)",
			len(t.FailToPass)+len(t.PassToPass), len(res.Tests), res.IDs()[0])
	}
	v.Resolved = v.HarnessError == "" && len(v.FailToPass.Failed)+len(v.FailToPass.Missing)+len(v.PassToPass.Failed)+len(v.PassToPass.Missing) == 0 &&
		ranTests(res) && !v.Tampered && v.PatchApplied
	if v.HarnessError != "" && r.patch != nil && !v.Tampered {
		patchFault(ctx, r, &v)
	}
	return v
}

// patchFault decides whose fault a candidate's harness error is: it runs the
// suite once more without the patch (a fresh environment, as every run). When the
// pristine repository's suite runs and reports the task's tests, the patch broke
// it (a build or collection error, a setup it breaks): the verdict is unresolved,
// as SWE-bench grades it. Otherwise the task's suite is at fault, and the harness
// error stands.
func patchFault(ctx context.Context, g *run, v *Verdict) {
	var base Verdict
	// The hidden tests as they are: the question is only whether the suite runs.
	r := &run{svc: g.svc, owner: g.owner, t: g.t, o: g.o, seed: g.seed}
	res, fail := r.once(ctx, &base, g.t.Hidden)
	switch {
	case fail != nil && fail.kind == "infra":
		v.Problems = append(v.Problems, "could not run the suite without the patch to tell whose fault the harness error is: "+fail.msg)
		return
	case fail != nil || len(res.Find(slices.Concat(g.t.FailToPass, g.t.PassToPass))) == 0:
		return // the task's suite fails without the patch too
	}
	v.Problems = append(v.Problems, v.HarnessError+"; without the patch the suite runs and reports the task's tests, so the patch broke it")
	v.HarnessError = ""
}

// failure is why one run gave no results: the grader's (infra), the task's suite
// (harness), or the run's own (a problem: the results are not trusted).
type failure struct {
	kind string // "infra", "harness" or "problem"
	msg  string
}

func (f *failure) record(v *Verdict) {
	switch f.kind {
	case "infra":
		v.InfraError = f.msg
	case "harness":
		v.HarnessError = f.msg
	default:
		v.Problems = append(v.Problems, f.msg)
	}
}

func infraf(format string, args ...any) *failure {
	return &failure{"infra", fmt.Sprintf(format, args...)}
}

// resolves reports whether res passes every listed test of t.
func resolves(t *task.Task, res task.Results) bool {
	found := res.Find(slices.Concat(t.FailToPass, t.PassToPass))
	for _, id := range slices.Concat(t.FailToPass, t.PassToPass) {
		if found[id] != task.OutcomePass {
			return false
		}
	}
	return true
}

func merged(runs []task.Results) task.Results {
	res, _ := merge(runs)
	return res
}

// apply applies r.patch strictly, else (unless Options.StrictApply) refitted
// with the fallbacks refit describes, and records how in v. It reports whether
// the patch applied. A refitted patch replaces r.patch, so that every later run
// applies exactly what this one did.
func (r *run) apply(ctx context.Context, v *Verdict) bool {
	method := "strict"
	if len(v.ApplyNotes) > 0 {
		method = "fuzzy" // recounted
	}
	rep, err := r.svc.ApplyPatch(ctx, r.owner, r.id, r.patch)
	if err != nil && ctx.Err() == nil && !r.o.StrictApply {
		read := func(name string) ([]byte, error) { return r.svc.ReadFile(ctx, r.owner, r.id, name, 0, 0) }
		fixed, notes, ferr := refit(r.patch, read)
		if ferr != nil {
			err = fmt.Errorf("%w; fuzzy apply: %v", err, ferr)
		} else if frep, ferr := r.svc.ApplyPatch(ctx, r.owner, r.id, fixed); ferr != nil {
			err = fmt.Errorf("%w; fuzzy apply: %v", err, ferr)
		} else {
			rep, err, method = frep, nil, "fuzzy"
			r.patch = fixed
			v.ApplyNotes = append(v.ApplyNotes, notes...)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			v.InfraError = fmt.Sprintf("apply patch: %v", err)
		} else {
			v.Problems = append(v.Problems, fmt.Sprintf("patch does not apply: %v", err))
		}
		return false
	}
	// The applier's parser must agree with the one the tamper check used.
	for _, f := range rep.Files {
		for _, p := range []string{f.Path, f.OldPath} {
			if p != "" && !slices.Contains(r.paths, p) {
				v.Tampered = true
				v.TamperPaths = append(v.TamperPaths, p)
			}
		}
	}
	if v.Tampered {
		v.Problems = append(v.Problems, "the patch applied to paths the tamper check did not see")
		return false
	}
	v.PatchApplied, v.ApplyMethod = true, method
	return true
}

// merge folds the results of several runs of the same tests: each test keeps its
// worst outcome, and a test whose outcome differed between runs is flaky.
func merge(runs []task.Results) (task.Results, []string) {
	if len(runs) == 1 {
		return runs[0], nil
	}
	out := task.Results{Tests: map[string]task.Outcome{}, Keys: map[string]task.TestKey{}}
	for _, r := range runs {
		maps.Copy(out.Keys, r.Keys)
	}
	var flaky []string
	ids := map[string]bool{}
	for _, r := range runs {
		for id := range r.Tests {
			ids[id] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		first := runs[0].Outcome(id)
		worst := first
		for _, r := range runs[1:] {
			o := r.Outcome(id)
			if o != first {
				if !slices.Contains(flaky, id) {
					flaky = append(flaky, id)
				}
			}
			if o == "" || o.Worse(worst) {
				worst = o
			}
		}
		if worst != "" {
			out.Tests[id] = worst
		}
	}
	return out, flaky
}

// ranTests is the proof the suite ran: Parse vouched for the results (nonce,
// exit status) and at least one test passed.
func ranTests(res task.Results) bool {
	for _, id := range res.IDs() {
		if res.Outcome(id) == task.OutcomePass {
			return true
		}
	}
	return false
}

// split sorts ids by their outcome in found (Results.Find): passed, ran and did
// not pass, or missing.
func split(found map[string]task.Outcome, ids []string) Split {
	s := Split{Passed: []string{}, Failed: []string{}}
	for _, id := range ids {
		switch o, ok := found[id]; {
		case !ok:
			s.Missing = append(s.Missing, id)
		case o == task.OutcomePass:
			s.Passed = append(s.Passed, id)
		default:
			s.Failed = append(s.Failed, id)
		}
	}
	return s
}

// run is one grade: the patch, the hidden files and the results of every run of
// the tests, each in an environment of its own.
type run struct {
	svc   Service
	owner env.Owner
	t     *task.Task
	o     Options
	log   io.Writer // the test log, or nil
	seed  int64     // the judge's seed, the same for every run
	patch []byte    // nil for an empty patch; after a fuzzy apply, the refitted one
	paths []string  // what the tamper check saw the patch touch
	// canaries, when not nil, are the two copies of the hidden files that each
	// pass runs, one environment each; else a pass runs t.Hidden once.
	canaries *canaries
	forged   []string // why the results are forged (canaries)
	runs     int      // test runs so far, of either copy
	passes   int      // passes over the hidden tests so far (pass)
	copy     string   // which copy of the canaries the current run holds, for the log

	// The current run's environment.
	id   string
	size int64    // its workspace's size limit
	priv string   // its private directory, a name the patch cannot guess
	envv []string // the environment of setup and test commands, without the nonce
}

// pass runs every hidden test once: the hidden files as they are in one
// environment, or each copy of the canaries in an environment of its own, whose
// results it reads back together (canaries.check).
func (r *run) pass(ctx context.Context, v *Verdict) (task.Results, *failure) {
	r.passes++
	if r.canaries == nil {
		return r.once(ctx, v, r.t.Hidden)
	}
	var runs [2]task.Results
	for i, dir := range r.canaries.dirs {
		r.copy = fmt.Sprintf(" (copy %d of 2 of the hidden tests)", i+1)
		res, fail := r.once(ctx, v, dir)
		if fail != nil {
			return res, fail
		}
		runs[i] = res
	}
	res, forged := r.canaries.check(runs)
	r.forged = append(r.forged, forged...)
	return res, nil
}

// once runs the tests one more time, in an environment of their own made from
// the pristine repository with the shared caches mounted (gocache.Mounts): the
// patch applied (the first run records how in v), the hidden files copied in
// from the directory hidden, then the setup and the test command run. Nothing an earlier run left behind
// (the code under test may have rewritten or blocked any path it can write)
// reaches it. A non-nil failure says why the run gave no results.
func (r *run) once(ctx context.Context, v *Verdict, hidden string) (res task.Results, fail *failure) {
	r.runs++
	execs := 1
	if len(r.t.Setup) > 0 {
		execs = 2
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(execs)*r.t.Limits.Timeout+r.o.Slack)
	defer cancel()
	co := env.CreateOptions{
		Owner:     r.owner,
		Workspace: r.t.Repo, // read-only lower layer: the task directory is never modified
		// The agent's root file system too (task.yaml environment); the caller
		// has built it (task.Environment.Ensure).
		Template: r.t.Environment.TemplateName(),
		Limits:   env.Limits{Memory: r.t.Limits.Memory, Pids: r.t.Limits.Pids},
		Mounts:   r.mounts(),
		Labels:   map[string]string{"agentbox.grade": r.t.ID},
	}
	if n := r.t.Network; n != nil {
		// For setup only: test closes it before the test command runs.
		co.Network = &env.Network{Allow: n.Allow, AllowPrivate: n.AllowPrivate, DNSOverride: n.DNSOverride}
	}
	info, err := r.svc.Create(ctx, co)
	if err != nil {
		return res, infraf("create environment: %v", err)
	}
	r.id, r.size = info.ID, info.Limits.WorkspaceSize
	v.Isolation = string(info.Isolation)
	defer func() {
		// The caller's ctx may be done; destroying must still happen.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer dcancel()
		if err := r.svc.Destroy(dctx, r.owner, info.ID); err != nil && (fail == nil || fail.kind != "infra") {
			fail = infraf("destroy environment: %v", err)
		}
	}()
	if r.log != nil && r.runs > 1 {
		fmt.Fprintf(r.log, "=== %s%s, in a fresh environment\n", r.label(), r.copy)
	}

	switch {
	case r.patch == nil:
		v.PatchApplied, v.ApplyMethod = true, "empty"
	case r.runs == 1:
		if !r.apply(ctx, v) {
			if v.InfraError != "" {
				return res, infraf("%s", v.InfraError)
			}
			return res, &failure{"problem", "the patch was not applied"}
		}
	default:
		// It applied to the same pristine tree before.
		if _, err := r.svc.ApplyPatch(ctx, r.owner, r.id, r.patch); err != nil {
			return res, infraf("apply the patch again: %v", err)
		}
	}
	if err := r.prepare(ctx); err != nil {
		return res, r.fault(err)
	}
	return r.test(ctx, hidden)
}

// fault is the failure of a step of the grader's own after the patch was
// applied: the grader's (infra), unless the workspace has no room left for it
// (ENOSPC, EDQUOT), which a patch that filled it caused. The pristine
// repository and the hidden tests fit: with an empty patch it stays the
// grader's.
func (r *run) fault(err error) *failure {
	if r.patch != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return &failure{"problem", fmt.Sprintf("the workspace is full after the patch (its limit is %d bytes), so the grader could not run the tests: %v", r.size, err)}
	}
	return infraf("%v", err)
}

// label names the current pass in the log: "run", then "rerun N".
func (r *run) label() string {
	if r.passes <= 1 {
		return "run"
	}
	return fmt.Sprintf("rerun %d", r.passes-1)
}

// mounts are the shared caches a run of r.t sees (gocache.Mounts).
func (r *run) mounts() []env.Mount {
	m, _ := gocache.Mounts(r.t, r.o.GoCache, r.o.GoModCache)
	return m
}

// prepare makes the private scratch directory and the commands' environment.
// Its error is the grader's.
func (r *run) prepare(ctx context.Context) error {
	r.priv = ".agentbox-grade-" + rand.Text()
	if err := r.svc.Mkdir(ctx, r.owner, r.id, r.priv+"/scratch"); err != nil {
		return fmt.Errorf("make scratch directory: %w", err)
	}
	_, vars := gocache.Mounts(r.t, r.o.GoCache, r.o.GoModCache)
	r.envv = task.SetEnv(append([]string{"PATH=" + r.o.Path}, r.t.Env("/workspace/"+r.priv+"/scratch")...), vars...)
	return nil
}

// test copies the hidden tests in, runs setup and the test command with a fresh
// nonce and results file, and parses the results.
func (r *run) test(ctx context.Context, hidden string) (res task.Results, fail *failure) {
	if err := copyHidden(ctx, r.svc, r.owner, r.id, r.t, hidden); err != nil {
		return res, r.fault(fmt.Errorf("copy hidden tests: %w", err))
	}
	results := fmt.Sprintf("%s/results-%d.xml", r.priv, r.runs)
	nonce := task.NewNonce()
	envv := append(slices.Clone(r.envv), task.EnvResults+"=/workspace/"+results, task.EnvNonce+"="+nonce,
		fmt.Sprintf("%s=%d", task.EnvSeed, r.seed))
	expand := func(argv []string) []string {
		out := slices.Clone(argv)
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], task.ResultsVar, "/workspace/"+results)
		}
		return out
	}
	run := "test " + r.label() + r.copy
	if len(r.t.Setup) > 0 {
		sr, infra := r.exec(ctx, "setup", expand(r.t.Setup), envv)
		if infra != nil {
			return res, infraf("%v", infra)
		}
		switch {
		case sr.Error != "":
			return res, &failure{"harness", "start setup: " + sr.Error}
		case sr.ExitStatus() != 0 || sr.TimedOut:
			return res, &failure{"harness", fmt.Sprintf("setup exited %d: %s", sr.ExitStatus(), tail(sr.Stderr, 2000))}
		}
		if r.t.Network != nil {
			// The tests never have a network: nothing is allowed from now on, and
			// whatever setup left open is cut.
			if err := r.svc.SetNetwork(ctx, r.owner, r.id, env.Network{Allow: []string{}}); err != nil {
				return res, infraf("close the network after setup: %v", err)
			}
		}
	}
	tr, infra := r.exec(ctx, run, expand(r.t.TestCommand), envv)
	if infra != nil {
		return res, infraf("%v", infra)
	}
	if tr.TimedOut {
		return res, &failure{"problem", fmt.Sprintf("test command timed out after %v", r.t.Limits.Timeout)}
	}
	if tr.Error != "" {
		return res, &failure{"harness", "start test command: " + tr.Error}
	}
	out := task.Output{ExitCode: tr.ExitStatus(), Stdout: []byte(tr.Stdout), Stderr: []byte(tr.Stderr)}
	if r.t.Witnessed {
		out.Nonce = nonce
	}
	for _, s := range []struct {
		truncated bool
		ref       string
		dst       *[]byte
	}{{tr.StdoutTruncated, tr.StdoutRef, &out.Stdout}, {tr.StderrTruncated, tr.StderrRef, &out.Stderr}} {
		if !s.truncated {
			continue
		}
		if s.ref == "" {
			return res, &failure{"problem", "test output truncated"}
		}
		data, _, err := r.svc.ReadArtifact(ctx, r.owner, s.ref, 0, 0)
		if err != nil {
			return res, infraf("read test output: %v", err)
		}
		*s.dst = data
	}
	if r.t.ResultFormat == task.JUnit {
		data, err := r.svc.ReadFile(ctx, r.owner, r.id, results, 0, 0)
		switch {
		case err == nil:
			out.ResultsFile = data
			if r.log != nil {
				fmt.Fprintf(r.log, "--- results file\n%s\n", data)
			}
		case errors.Is(err, fs.ErrNotExist):
		default:
			// A symlink or a huge file planted by the code under test is its doing.
			return res, &failure{"problem", fmt.Sprintf("read results: %v", err)}
		}
	}
	res, err := task.Parse(r.t.ResultFormat, out)
	var re *task.ResultsError
	if r.canaries != nil && errors.As(err, &re) && re.Contradiction {
		// With canaries in, the run's output is the code under test's to forge.
		r.forged = append(r.forged, re.Reason)
	}
	if err != nil {
		if !r.t.Witnessed && out.ResultsFile == nil && r.t.ResultFormat == task.JUnit {
			// The framework wrote no report: it did not get as far as running tests.
			return task.Results{}, nil
		}
		return res, &failure{"problem", fmt.Sprintf("%v (exit %d): %s", err, out.ExitCode, tail(tr.Stderr, 2000))}
	}
	return res, nil
}

// exec runs argv from the repository root under the task's limits, and logs its
// output under the heading what. Only a failure of the harness is returned as an
// error.
func (r *run) exec(ctx context.Context, what string, argv, envv []string) (*runner.Result, error) {
	res, err := r.svc.Exec(ctx, r.owner, r.id, env.ExecRequest{
		Argv: argv, Env: envv, Cwd: "/workspace", Timeout: r.t.Limits.Timeout,
		OutputLimit: r.o.OutputLimit, OutputTotal: 2 * r.o.OutputLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	if r.log != nil {
		fmt.Fprintf(r.log, "=== %s: %s\n=== exit %d, %d ms%s\n--- stdout%s\n%s\n--- stderr%s\n%s\n",
			what, strings.Join(argv, " "), res.ExitStatus(), res.DurationMS, timedOut(res),
			truncated(res.StdoutTruncated), res.Stdout, truncated(res.StderrTruncated), res.Stderr)
	}
	return res, nil
}

func timedOut(res *runner.Result) string {
	if res.TimedOut {
		return ", timed out"
	}
	return ""
}

func truncated(t bool) string {
	if t {
		return " (truncated: head and tail kept)"
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
