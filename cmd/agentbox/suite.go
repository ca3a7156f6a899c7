package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/gocache"
	"github.com/agentbox/agentbox/internal/task"
)

// suiteFlags defines the flags naming a suite and the Go build cache, shared by
// eval and grade.
func suiteFlags(f *pflag.FlagSet, suite, repos, goCache *string) {
	f.StringVar(suite, "suite", "builtin", "builtin, a task directory, a directory of tasks, or a SWE-bench .jsonl file (grade: with --oracle)")
	f.StringVar(repos, "repos", "", "local git clones for a SWE-bench suite (owner__name or owner/name)")
	f.StringVar(goCache, "go-cache", "", `warm Go build cache directory (default: in the user cache directory, warmed on first use; "off": compile cold)`)
}

// loadSuite loads the tasks spec names: "builtin" (extracted under tmp), a task
// directory, a directory of task directories, or a SWE-bench JSONL file (imported
// under tmp from the local clones in repos).
func loadSuite(ctx context.Context, spec, repos, tmp string) ([]*task.Task, error) {
	if spec == "builtin" {
		return task.Builtin(filepath.Join(tmp, "builtin"))
	}
	fi, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("--suite %s: %w (give builtin, a task directory, a directory of tasks, or a SWE-bench .jsonl file)", spec, err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(spec, task.FileName)); err == nil {
			t, err := task.Load(spec)
			if err != nil {
				return nil, err
			}
			return []*task.Task{t}, nil
		}
		return task.LoadSuite(spec)
	}
	if !strings.HasSuffix(spec, ".jsonl") {
		return nil, fmt.Errorf("--suite %s: a file must be SWE-bench JSONL (*.jsonl)", spec)
	}
	if repos == "" {
		return nil, fmt.Errorf("--suite %s: importing SWE-bench instances needs --repos DIR, a directory of local git clones (owner__name or owner/name)", spec)
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := filepath.Join(tmp, "swebench")
	if _, err := task.ImportSWEBench(ctx, f, task.ImportOptions{OutDir: out, Repos: repos}); err != nil {
		return nil, err
	}
	return task.LoadSuite(out)
}

// goCacheFor returns the warm Go build cache for the Go tasks among tasks (see
// gocache.For), or "" when flag is "off".
func goCacheFor(ctx context.Context, svc gocache.Service, flag string, tasks []*task.Task, say func(string)) (string, error) {
	if flag == "off" {
		return "", nil
	}
	return gocache.For(ctx, svc, env.Owner{Tenant: "local", Task: "warm"}, tasks, flag, say)
}
