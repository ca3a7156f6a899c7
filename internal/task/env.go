package task

import (
	"crypto/rand"
	"path/filepath"
	"slices"
	"strings"
)

// The environment variables of the results contract (see the package documentation).
const (
	// EnvResults names the file the judge writes its JUnit XML to. The grader picks
	// a path that does not exist yet and reads it without following links.
	EnvResults = "AGENTBOX_RESULTS"
	// EnvNonce carries the per-run random string that the judge echoes back; a
	// junit results file without it is rejected.
	EnvNonce = "AGENTBOX_NONCE"
	// EnvSeed carries the seed the judge draws its inputs from: fresh for every
	// grade, recorded in the verdict, so that a grade can be reproduced.
	EnvSeed = "AGENTBOX_SEED"
)

// NewNonce returns a fresh random nonce for one grading run.
func NewNonce() string { return rand.Text() }

// Env returns the variables to add to the minimal environment of every command
// of the task (setup and tests), for a run whose private scratch directory is
// scratch: the language's, then the task's own (Environ). For Go it keeps the
// toolchain offline and local (no module or toolchain downloads), ignores
// go.work, vendor/ and the user's go env file, and disables cgo; GOCACHE and
// GOPATH point into scratch, unless the task runs on a template, whose own
// (a warm module and build cache, as templates/go.yaml has) it keeps: writes
// to them go to the environment's private layer. For Python it keeps bytecode and the user's site
// directory out; the interpreter adds the working directory to sys.path as the
// project's own `python -m pytest` or `python -m unittest` expects (agentbox's
// hidden runners run python3 -I, which ignores PYTHON* variables and that
// directory). The grader still puts the interpreter or toolchain on PATH and adds
// EnvResults and EnvNonce, and may point GOCACHE and GOMODCACHE at shared caches.
func (t *Task) Env(scratch string) []string {
	var env []string
	switch t.Language {
	case Go:
		if t.Environment.TemplateName() == "" {
			env = []string{
				"GOCACHE=" + filepath.Join(scratch, "gocache"),
				"GOPATH=" + filepath.Join(scratch, "gopath"),
				"GOMODCACHE=" + filepath.Join(scratch, "gopath", "pkg", "mod"),
			}
		}
		env = append(env,
			"GOTOOLCHAIN=local",
			"GOPROXY=off",
			"GOFLAGS=-mod=readonly",
			"GOWORK=off",
			"GOENV=off",
			"CGO_ENABLED=0",
		)
	case Python:
		env = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"}
	case Node:
		env = []string{"NO_COLOR=1", "npm_config_offline=true", "npm_config_update_notifier=false"}
	}
	return SetEnv(env, t.Environ...)
}

// SetEnv returns env with each KEY=VALUE of vars set: replacing the entry of the
// same key, else appended. A process sees the first of duplicate entries, so
// appending alone would not override.
func SetEnv(env []string, vars ...string) []string {
	out := slices.Clone(env)
	for _, kv := range vars {
		k, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		if i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}
