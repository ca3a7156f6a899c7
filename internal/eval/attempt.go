package eval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/gocache"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// The files of an attempt's directory. attemptFile is written last: an attempt is
// done exactly when it exists.
const (
	attemptFile = "attempt.json"
	traceFile   = "trace.jsonl"  // the step trace (trace.Step per line)
	eventsFile  = "events.jsonl" // the append-only event log
	patchFile   = "patch.diff"
	gradeFile   = "grade.json"
	testLogFile = "test.log"
)

// agentScratch is where an agent's GOPATH (and, without a shared cache, its Go
// build cache) live inside its sandbox: outside /workspace, so never in its diff.
const agentScratch = "/tmp/agentbox"

type attemptRecord struct {
	Run string `json:"run"`
	report.Attempt
}

// attempt runs one attempt: the agent in its own environment, then the grading of
// its diff in a fresh one. ok is false when ctx ended before the attempt did: the
// attempt is then not recorded.
func (o *Options) attempt(ctx context.Context, run string, t *task.Task, n int) (a report.Attempt, ok bool) {
	rel := path.Join(t.ID, strconv.Itoa(n))
	dir := filepath.Join(o.Out, filepath.FromSlash(rel))
	a = report.Attempt{Task: t.ID, Title: t.Title, Attempt: n, Dir: rel}
	start := time.Now()
	finish := func() (report.Attempt, bool) {
		a.DurationMS = time.Since(start).Milliseconds()
		a.Outcome = report.Classify(a)
		if err := writeJSON(filepath.Join(dir, attemptFile), attemptRecord{Run: run, Attempt: a}); err != nil && a.Error == "" {
			a.Error = err.Error()
		}
		return a, true
	}
	// A directory left by an interrupted try is redone from scratch.
	if err := os.RemoveAll(dir); err != nil {
		a.Error = err.Error()
		return a, true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.Error = err.Error()
		return a, true
	}

	gopts := o.Grade
	gopts.LogFile = filepath.Join(dir, testLogFile)
	if t.Language == task.Go && o.goCache != nil {
		cache, err := o.goCache()
		if ctx.Err() != nil {
			return a, false
		}
		if err != nil {
			a.Error = err.Error()
			return finish()
		}
		gopts.GoCache = cache
	}

	patch, err := o.runAgent(ctx, run, t, n, dir, gopts, &a)
	if ctx.Err() != nil {
		return a, false
	}
	if err != nil {
		a.Error = err.Error()
		return finish()
	}
	a.PatchBytes = len(patch)

	gstart := time.Now()
	v, err := grade.Grade(ctx, o.Service, o.owner(t), t, patch, gopts)
	a.GradeMS = time.Since(gstart).Milliseconds()
	if ctx.Err() != nil {
		return a, false
	}
	if err != nil {
		a.Error = err.Error()
		return finish()
	}
	a.Verdict, a.Resolved, a.Tampered, a.InfraError = v, v.Resolved, v.Tampered, v.InfraError
	if err := writeJSON(filepath.Join(dir, gradeFile), v); err != nil {
		a.Error = err.Error()
	}
	return finish()
}

func (o *Options) owner(t *task.Task) env.Owner {
	w := o.Owner
	w.Task = t.ID
	return w
}

// envSpec is how an attempt's agent environment is made, whichever agent works
// in it: the same for the built-in loop and an external command.
type envSpec struct {
	limits env.Limits
	wall   time.Duration // the agent's wall budget
	labels map[string]string
	mounts []env.Mount
	env    []string // PATH and the task's variables, for the commands it runs
}

func (o *Options) envSpec(run string, t *task.Task, gopts grade.Options) envSpec {
	wall := o.Limits.MaxWall
	if wall <= 0 {
		wall = t.Limits.Timeout + 5*time.Minute
	}
	path := o.Grade.Path
	if path == "" {
		path = grade.DefaultPath
	}
	// The agent's environment gets the same shared caches as the grader's: its own
	// go test starts warm, and what it compiles stays in its private layer.
	mounts, vars := gocache.Mounts(t, gopts.GoCache, gopts.GoModCache)
	return envSpec{limits: env.Limits{Memory: t.Limits.Memory, Pids: t.Limits.Pids}, wall: wall,
		labels: map[string]string{"agentbox.eval": run, "agentbox.task": t.ID}, mounts: mounts,
		env: task.SetEnv(append([]string{"PATH=" + path}, t.Env(agentScratch)...), vars...)}
}

// runAgent runs the agent's session on t in a fresh environment and returns its
// diff: the built-in loop under o.Policy, or o.AgentCmd (runExternal). The
// environment is destroyed before it returns.
func (o *Options) runAgent(ctx context.Context, run string, t *task.Task, n int, dir string, gopts grade.Options, a *report.Attempt) (patch []byte, err error) {
	spec := o.envSpec(run, t, gopts)
	if len(o.AgentCmd) > 0 {
		start := time.Now()
		defer func() { a.AgentMS = time.Since(start).Milliseconds() }()
		return o.runExternal(ctx, t, n, dir, spec, a)
	}
	pol, redact, err := o.Policy(t)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	lim := o.Limits
	lim.MaxWall = spec.wall
	tf, err := os.Create(filepath.Join(dir, traceFile))
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	ef, err := os.Create(filepath.Join(dir, eventsFile))
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	var perms *agent.Permissions
	if o.Permissions != nil {
		pc := *o.Permissions
		if pc.Unanswered == "" {
			pc.Unanswered = grant.Refuse // nobody is there to ask: refuse and go on
		}
		if perms, err = agent.NewPermissions(pc); err != nil {
			return nil, err
		}
	}
	s, err := agent.RunSession(ctx, agent.SessionOptions{
		Env: tool.EnvOptions{Service: o.Service, Owner: o.owner(t), Workspace: t.Repo, Template: t.Environment.TemplateName(), Egress: o.Egress,
			Limits: spec.limits, TTL: spec.wall + 5*time.Minute, Labels: spec.labels, Mounts: spec.mounts,
			Tools: tool.BuiltinOptions{TestCommand: t.PublicTestCommand, TestTimeout: t.Limits.Timeout, Env: spec.env}},
		Permissions: perms, Goal: t.Statement, Policy: pol, Limits: lim, Model: o.Model,
		Sinks: []trace.Sink{trace.NewJSONL(ef), trace.NewProjector(tf)}, Redact: redact})
	if err != nil {
		return nil, err
	}
	a.AgentMS = s.Duration.Milliseconds()
	a.StopReason, a.Steps, a.ToolCalls = string(s.StopReason), s.Steps, s.ToolCalls
	a.CostUSD, a.InputTokens, a.OutputTokens = s.Usage.CostUSD, int64(s.Usage.InputTokens), int64(s.Usage.OutputTokens)
	if s.DiffErr != nil {
		return nil, fmt.Errorf("diff: %w", s.DiffErr)
	}
	if err := os.WriteFile(filepath.Join(dir, patchFile), s.Diff, 0o644); err != nil {
		return nil, err
	}
	return s.Diff, nil
}

// readAttempt reads a recorded attempt of the results directory out.
func readAttempt(out, id string, n int) (attemptRecord, bool) {
	b, err := os.ReadFile(filepath.Join(out, id, strconv.Itoa(n), attemptFile))
	if err != nil {
		return attemptRecord{}, false
	}
	var r attemptRecord
	if json.Unmarshal(b, &r) != nil || r.Task != id || r.Attempt.Attempt != n {
		return attemptRecord{}, false
	}
	return r, true
}

// writeJSON writes v indented to path atomically: a crash leaves the old file or
// the new one, never half of one.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp-" + rand.Text()
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func newRunID() string { return time.Now().UTC().Format("20060102T150405Z") + "-" + rand.Text()[:6] }
