package main

import (
	"context"
	"fmt"
	"os"
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

// loadSuite loads the tasks --suite names (task.Open), those of a SWE-bench
// file from the local clones in --repos; tmp receives what is extracted or
// imported.
func loadSuite(ctx context.Context, spec, repos, tmp string) ([]*task.Task, error) {
	if fi, err := os.Stat(spec); err == nil && fi.Mode().IsRegular() && strings.HasSuffix(spec, ".jsonl") && repos == "" {
		return nil, fmt.Errorf("--suite %s: importing SWE-bench instances needs --repos DIR, a directory of local git clones (owner__name or owner/name)", spec)
	}
	tasks, err := task.Open(ctx, spec, repos, tmp)
	if err != nil && spec != "builtin" {
		return nil, fmt.Errorf("--suite %s: %w", spec, err)
	}
	return tasks, err
}

// goCacheFor returns the warm Go build cache for the Go tasks among tasks (see
// gocache.For), or "" when flag is "off".
func goCacheFor(ctx context.Context, svc gocache.Service, flag string, tasks []*task.Task, say func(string)) (string, error) {
	if flag == "off" {
		return "", nil
	}
	return gocache.For(ctx, svc, env.Owner{Tenant: "local", Task: "warm"}, tasks, flag, say)
}
