package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/gocache"
	"github.com/agentbox/agentbox/internal/task"
)

// suiteOptions are the flags naming a suite, how its SWE-bench rows run, and
// the Go caches; shared by eval, grade and import.
type suiteOptions struct {
	suite, repos string
	specs        string    // a specs file (task.ReadSpecs)
	spec         task.Spec // the command line's one-off spec, over the specs file
	setup        string
	testCommand  string
	publicTest   string
	goCache      string
	goProxy      string // where DownloadModules fetches the Go tasks' modules from
	goModCache   string
}

func (s *suiteOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&s.suite, "suite", "builtin", "builtin, a task directory, a directory of tasks, or a SWE-bench .jsonl file (grade: with --oracle or --predictions)")
	f.StringVar(&s.repos, "repos", "", "local git clones for a SWE-bench suite (owner__name or owner/name)")
	f.StringVar(&s.specs, "specs", "", "SWE-bench suite: a YAML file saying how each repository and version runs (owner/name: {VERSION or \"*\": {framework, setup, test_command, result_format, env, timeout, ...}})")
	f.StringVar((*string)(&s.spec.Framework), "framework", "", "SWE-bench suite: pytest, unittest, go, node or command, over the specs and detection")
	f.StringVar((*string)(&s.spec.Language), "language", "", "SWE-bench suite: python, go or node")
	f.StringVar(&s.setup, "setup", "", "SWE-bench suite: setup command, as a JSON array or words split on spaces")
	f.StringVar(&s.testCommand, "test-command", "", "SWE-bench suite: test command (JSON array or words; ${AGENTBOX_RESULTS} is the results file), e.g. 'go test -json -count=1 ./...'")
	f.StringVar(&s.publicTest, "public-test-command", "", "SWE-bench suite: the agent's test command (JSON array or words)")
	f.StringVar((*string)(&s.spec.ResultFormat), "result-format", "", "SWE-bench suite: junit, go-test-json, unittest, tap or exit-code")
	f.StringArrayVar(&s.spec.Env, "task-env", nil, "SWE-bench suite: KEY=VALUE for every command of the tasks, e.g. PYTHONPATH=src (repeatable)")
	f.StringVar(&s.goCache, "go-cache", "", `warm Go build cache directory (default: in the user cache directory, warmed on first use; "off": compile cold)`)
	f.StringVar(&s.goProxy, "go-proxy", "", "fill the Go module cache with the Go tasks' dependencies from this module proxy before grading (https://proxy.golang.org, file:///DIR); grading itself stays offline")
	f.StringVar(&s.goModCache, "go-mod-cache", "", "Go module cache directory, mounted read-only into the Go tasks' environments (default with --go-proxy: in the user cache directory)")
}

// importOptions turns the flags into import options writing under out.
func (s *suiteOptions) importOptions(out string) (task.ImportOptions, error) {
	o := task.ImportOptions{OutDir: out, Repos: s.repos, Override: s.spec}
	for _, a := range []struct {
		flag, value string
		dst         *[]string
	}{{"--setup", s.setup, &o.Override.Setup}, {"--test-command", s.testCommand, &o.Override.TestCommand}, {"--public-test-command", s.publicTest, &o.Override.PublicTestCommand}} {
		if a.value == "" {
			continue
		}
		argv, err := parseArgv(a.value)
		if err != nil {
			return o, fmt.Errorf("%s: %w", a.flag, err)
		}
		*a.dst = argv
	}
	if s.specs != "" {
		sp, err := task.ReadSpecsFile(s.specs)
		if err != nil {
			return o, fmt.Errorf("--specs: %w", err)
		}
		o.Specs = sp
	}
	return o, nil
}

// parseArgv reads a command given on the command line: a JSON array of strings,
// or words separated by spaces (no quoting: use the JSON form for an argument
// with a space).
func parseArgv(s string) ([]string, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "[") {
		var argv []string
		if err := json.Unmarshal([]byte(s), &argv); err != nil {
			return nil, fmt.Errorf("%q: not a JSON array of strings: %w", s, err)
		}
		return argv, nil
	}
	argv := strings.Fields(s)
	if len(argv) == 0 {
		return nil, fmt.Errorf("%q: empty command", s)
	}
	return argv, nil
}

// load loads the tasks --suite names (task.Open), those of a SWE-bench file
// from the local clones in --repos, run as --specs and the spec flags say, else
// as detected; tmp receives what is extracted or imported.
func (s *suiteOptions) load(ctx context.Context, tmp string) ([]*task.Task, error) {
	if fi, err := os.Stat(s.suite); err == nil && fi.Mode().IsRegular() && strings.HasSuffix(s.suite, ".jsonl") && s.repos == "" {
		return nil, fmt.Errorf("--suite %s: importing SWE-bench instances needs --repos DIR, a directory of local git clones (owner__name or owner/name)", s.suite)
	}
	imp, err := s.importOptions("")
	if err != nil {
		return nil, err
	}
	tasks, err := task.Open(ctx, s.suite, tmp, imp)
	if err != nil && s.suite != "builtin" {
		return nil, fmt.Errorf("--suite %s: %w", s.suite, err)
	}
	return tasks, err
}

// importRows imports the SWE-bench JSONL file --suite into out (agentbox import).
func (s *suiteOptions) importRows(ctx context.Context, out string) ([]task.Imported, error) {
	if !strings.HasSuffix(s.suite, ".jsonl") {
		return nil, fmt.Errorf("--suite %s: a file must be SWE-bench JSONL (*.jsonl)", s.suite)
	}
	if s.repos == "" {
		return nil, fmt.Errorf("--suite %s: importing SWE-bench instances needs --repos DIR, a directory of local git clones (owner__name or owner/name)", s.suite)
	}
	o, err := s.importOptions(out)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(s.suite)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return task.ImportSWEBench(ctx, f, o)
}

// goModCacheFor returns the Go module cache for the Go tasks among tasks
// (gocache.ModulesFor): --go-mod-cache, filled from --go-proxy first when that
// is given.
func (s *suiteOptions) goModCacheFor(ctx context.Context, tasks []*task.Task, say func(string)) (string, error) {
	return gocache.ModulesFor(ctx, tasks, s.goModCache, s.goProxy, say)
}

// goCacheFor returns the warm Go build cache for the Go tasks among tasks (see
// gocache.For), warmed with the module cache modCache, or "" when flag is "off".
func goCacheFor(ctx context.Context, svc gocache.Service, flag, modCache string, tasks []*task.Task, say func(string)) (string, error) {
	if flag == "off" {
		return "", nil
	}
	return gocache.For(ctx, svc, env.Owner{Tenant: "local", Task: "warm"}, tasks, flag, modCache, say)
}
