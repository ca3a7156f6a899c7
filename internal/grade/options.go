package grade

import (
	"time"

	"github.com/agentbox/agentbox/internal/runner"
)

// DefaultPath is the PATH of graded commands unless Options.Path is set: the
// standard directories and the Go toolchain's.
const DefaultPath = "/usr/local/go/bin:" + runner.DefaultPath

// Options tune one grading run. The zero value is safe.
type Options struct {
	// GoCache is a host directory holding a trusted warm Go build cache
	// (gocache.Warm). For Go tasks it is mounted copy-on-write as GOCACHE: a run
	// writes to a private layer that ends with its environment, so no run can
	// poison the cache or the next run; empty means a cold cache in the run's
	// scratch directory.
	GoCache string
	// GoModCache is a host directory holding a Go module cache (GOMODCACHE's
	// layout) with the modules the Go tasks need, filled beforehand
	// (gocache.DownloadModules). It is mounted read-only as GOMODCACHE; GOPROXY
	// stays off. Empty means an empty module cache: a module with dependencies
	// does not build.
	GoModCache string
	// Path is the PATH of the setup and test commands (DefaultPath when empty).
	Path string
	// OutputLimit caps the captured standard output of the test command, which
	// go-test-json and tap results are parsed from. Default 16 MiB; a truncated
	// capture is read back from its artifact.
	OutputLimit int64
	// Reruns runs the tests this many more times after the first run, each in a
	// fresh environment from the pristine repository with a fresh nonce, to find
	// flaky tests (Verdict.Flaky). Each test counts by its worst outcome.
	Reruns int
	// Seed is the seed the judge draws its random inputs from (AGENTBOX_SEED); 0
	// means a fresh one. Verdict.Seed records the one used, so that a grade can be
	// reproduced.
	Seed int64
	// StrictApply turns off the fallbacks of a patch that does not apply exactly
	// (recounted hunk headers, offsets, whitespace): such a patch is not applied.
	StrictApply bool
	// NoCanaries runs the hidden tests of a task graded by its own framework
	// (go test -json, pytest, unittest) once, as they are, without the two copies
	// with canaries that detect forged output (package canary), which cost a
	// second run.
	NoCanaries bool
	// LogFile, when set, is a host file the grader writes the output of the setup
	// and test commands to (Verdict.Logs names it).
	LogFile string
	// Slack is added to the task's timeout for the harness's own steps
	// (creating the environment, copying files). Default 1 minute.
	Slack time.Duration
}

func (o Options) withDefaults() Options {
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = 16 << 20
	}
	if o.Slack <= 0 {
		o.Slack = time.Minute
	}
	return o
}
