package task

import (
	"crypto/rand"
	"path/filepath"
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

// Env returns the variables to add to the minimal environment of every command of
// the task (setup and tests), for a run whose private scratch directory is scratch.
// For Go it keeps the toolchain offline and local (no module or toolchain
// downloads), ignores go.work, vendor/ and the user's go env file, and disables
// cgo; GOCACHE and GOPATH point into scratch. The grader still puts the interpreter
// or toolchain on PATH and adds EnvResults and EnvNonce.
func (t *Task) Env(scratch string) []string {
	switch t.Language {
	case Go:
		return []string{
			"GOCACHE=" + filepath.Join(scratch, "gocache"),
			"GOPATH=" + filepath.Join(scratch, "gopath"),
			"GOMODCACHE=" + filepath.Join(scratch, "gopath", "pkg", "mod"),
			"GOTOOLCHAIN=local",
			"GOPROXY=off",
			"GOFLAGS=-mod=readonly",
			"GOWORK=off",
			"GOENV=off",
			"CGO_ENABLED=0",
		}
	case Python:
		// The built-in tasks run python3 -I, which ignores PYTHON* variables; these
		// matter for task commands that do not.
		return []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1", "PYTHONSAFEPATH=1"}
	}
	return nil
}
