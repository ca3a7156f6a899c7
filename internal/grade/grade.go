package grade

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/task"
)

// Grade grades patch against t in a fresh environment of svc owned by owner.
// A patch touching a protected path is graded tampered without running anything.
// The environment is always destroyed. The error is non-nil only for a caller
// mistake (nil task or service); every other failure is in the Verdict.
func Grade(ctx context.Context, svc env.Service, owner env.Owner, t *task.Task, patch []byte, opts Options) (Verdict, error) {
	if svc == nil || t == nil {
		return Verdict{}, errors.New("grade: nil service or task")
	}
	start := time.Now()
	v := grade(ctx, svc, owner, t, patch, opts.withDefaults())
	v.DurationMS = time.Since(start).Milliseconds()
	return v, nil
}

func grade(ctx context.Context, svc env.Service, owner env.Owner, t *task.Task, patch []byte, o Options) Verdict {
	v := Verdict{FailToPass: Split{Failed: slices.Clone(t.FailToPass)}, PassToPass: Split{Failed: slices.Clone(t.PassToPass)}}
	empty := len(bytes.TrimSpace(patch)) == 0
	var paths []string
	if !empty {
		var err error
		if paths, err = touched(patch); err != nil {
			v.Problems = append(v.Problems, err.Error())
			return v
		}
		if len(paths) == 0 {
			v.Problems = append(v.Problems, "patch names no file")
			return v
		}
		if hits := tampered(t, paths); len(hits) > 0 {
			v.Tampered, v.TamperPaths = true, hits
			return v
		}
	}

	ctx, cancel := context.WithTimeout(ctx, t.Limits.Timeout+o.Slack)
	defer cancel()
	info, err := svc.Create(ctx, env.CreateOptions{
		Owner:     owner,
		Workspace: t.Repo, // read-only lower layer: the task directory is never modified
		Limits:    env.Limits{Memory: t.Limits.Memory, Pids: t.Limits.Pids},
		Network:   "none",
		Labels:    map[string]string{"agentbox.grade": t.ID},
	})
	if err != nil {
		v.InfraError = fmt.Sprintf("create environment: %v", err)
		return v
	}
	defer func() {
		// The caller's ctx may be done; destroying must still happen.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer dcancel()
		if err := svc.Destroy(dctx, owner, info.ID); err != nil && v.InfraError == "" {
			v.InfraError = fmt.Sprintf("destroy environment: %v", err)
		}
	}()
	r := run{svc: svc, owner: owner, id: info.ID, t: t, o: o}

	if empty {
		v.PatchApplied, v.ApplyMethod = true, "empty"
	} else {
		rep, err := svc.ApplyPatch(ctx, owner, info.ID, patch)
		if err != nil {
			if ctx.Err() != nil {
				v.InfraError = fmt.Sprintf("apply patch: %v", err)
			} else {
				v.Problems = append(v.Problems, fmt.Sprintf("patch does not apply: %v", err))
			}
			return v
		}
		// The applier's parser must agree with the one the tamper check used.
		for _, f := range rep.Files {
			for _, p := range []string{f.Path, f.OldPath} {
				if p != "" && !slices.Contains(paths, p) {
					v.Tampered = true
					v.TamperPaths = append(v.TamperPaths, p)
				}
			}
		}
		if v.Tampered {
			v.Problems = append(v.Problems, "the patch applied to paths the tamper check did not see")
			return v
		}
		v.PatchApplied, v.ApplyMethod = true, "strict"
	}

	res, infra, err := r.test(ctx)
	switch {
	case infra != nil:
		v.InfraError = infra.Error()
		return v
	case err != nil:
		v.Problems = append(v.Problems, err.Error())
		return v
	}
	v.Problems = append(v.Problems, res.Problems...)
	v.FailToPass = split(res, t.FailToPass)
	v.PassToPass = split(res, t.PassToPass)
	v.Resolved = len(v.FailToPass.Failed) == 0 && len(v.PassToPass.Failed) == 0 && ranTests(res)
	return v
}

// ranTests is the proof the suite ran: Parse vouched for the results (nonce,
// witness, exit status) and at least one test passed.
func ranTests(res task.Results) bool {
	for _, id := range res.IDs() {
		if res.Outcome(id) == task.OutcomePass {
			return true
		}
	}
	return false
}

func split(res task.Results, ids []string) Split {
	s := Split{Passed: []string{}, Failed: []string{}}
	for _, id := range ids {
		if res.Outcome(id) == task.OutcomePass {
			s.Passed = append(s.Passed, id)
		} else {
			s.Failed = append(s.Failed, id)
		}
	}
	return s
}

// run is one environment being graded.
type run struct {
	svc   env.Service
	owner env.Owner
	id    string
	t     *task.Task
	o     Options
}

// test copies the hidden tests in, runs setup and the test command, and parses
// the results. infra reports a failure of the grader; err one of the run.
func (r run) test(ctx context.Context) (res task.Results, infra, err error) {
	// A name the patch cannot have guessed, for the scratch directory and results.
	priv := ".agentbox-grade-" + rand.Text()
	if err := r.svc.Mkdir(ctx, r.owner, r.id, priv+"/scratch"); err != nil {
		return res, fmt.Errorf("make scratch directory: %w", err), nil
	}
	if r.t.Language == task.Go && r.o.GoCache != "" {
		names, err := treeFiles(r.o.GoCache)
		if err != nil {
			return res, fmt.Errorf("read go cache: %w", err), nil
		}
		if err := upload(ctx, r.svc, r.owner, r.id, priv+"/scratch/gocache", r.o.GoCache, names); err != nil {
			return res, fmt.Errorf("copy go cache: %w", err), nil
		}
	}
	if err := copyHidden(ctx, r.svc, r.owner, r.id, r.t); err != nil {
		return res, fmt.Errorf("copy hidden tests: %w", err), nil
	}

	nonce := task.NewNonce()
	results := priv + "/results.xml"
	envv := append([]string{"PATH=" + r.o.Path}, r.t.Env("/workspace/"+priv+"/scratch")...)
	envv = append(envv, task.EnvResults+"=/workspace/"+results, task.EnvNonce+"="+nonce)

	if len(r.t.Setup) > 0 {
		sr, infra := r.exec(ctx, r.t.Setup, envv)
		if infra != nil {
			return res, infra, nil
		}
		if sr.ExitStatus() != 0 || sr.TimedOut {
			return res, nil, fmt.Errorf("setup exited %d: %s", sr.ExitStatus(), tail(sr.Stderr, 2000))
		}
	}
	tr, infra := r.exec(ctx, r.t.TestCommand, envv)
	if infra != nil {
		return res, infra, nil
	}
	if tr.TimedOut {
		return res, nil, fmt.Errorf("test command timed out after %v", r.t.Limits.Timeout)
	}
	if tr.Error != "" {
		return res, fmt.Errorf("start test command: %s", tr.Error), nil
	}
	out := task.Output{ExitCode: tr.ExitStatus(), Stdout: []byte(tr.Stdout), Nonce: nonce}
	if tr.StdoutTruncated {
		if tr.StdoutRef == "" {
			return res, nil, errors.New("test output truncated")
		}
		data, _, err := r.svc.ReadArtifact(ctx, r.owner, tr.StdoutRef, 0, 0)
		if err != nil {
			return res, fmt.Errorf("read test output: %w", err), nil
		}
		out.Stdout = data
	}
	if r.t.ResultFormat == task.JUnit {
		data, err := r.svc.ReadFile(ctx, r.owner, r.id, results, 0, 0)
		switch {
		case err == nil:
			out.ResultsFile = data
		case errors.Is(err, fs.ErrNotExist):
		default:
			// A symlink or a huge file planted by the code under test is its doing.
			return res, nil, fmt.Errorf("read results: %w", err)
		}
	}
	res, err = task.Parse(r.t.ResultFormat, out)
	if err != nil {
		return res, nil, fmt.Errorf("%w (exit %d): %s", err, out.ExitCode, tail(tr.Stderr, 2000))
	}
	return res, nil, nil
}

// exec runs argv from the repository root under the task's limits. Only a failure
// of the harness is returned as an error.
func (r run) exec(ctx context.Context, argv, envv []string) (*runner.Result, error) {
	res, err := r.svc.Exec(ctx, r.owner, r.id, env.ExecRequest{
		Argv: argv, Env: envv, Cwd: "/workspace", Timeout: r.t.Limits.Timeout,
		OutputLimit: r.o.OutputLimit, OutputTotal: 2 * r.o.OutputLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return res, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
