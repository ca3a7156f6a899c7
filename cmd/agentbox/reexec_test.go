package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestInitSkipsTheBinarysPackages: the agentbox binary re-executed as the sandbox
// init runs it from package nsinit's init function, before the packages only the CLI needs are
// initialised (issue 16: the init paid the whole binary's package initialisation,
// ~6 ms, on every run). Started without its pipes, the init fails at once; the
// package initialisation trace of that run must hold none of the CLI's packages.
func TestInitSkipsTheBinarysPackages(t *testing.T) {
	cmd := exec.Command(agentbox)
	cmd.Args = []string{nsinit.Argv0Init}
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	// The CLI would print its help and exit 0; the init exits 1 without its config.
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("run as %s: %v, want exit status 1 (the init without its pipes); stderr:\n%s", nsinit.Argv0Init, err, stderr.String())
	}
	trace := stderr.String()
	if !strings.Contains(trace, "init runtime @") {
		t.Fatalf("no package initialisation trace:\n%s", trace)
	}
	for _, pkg := range []string{"internal/eval/report", "internal/model", "internal/policy", "internal/task", "internal/tool", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus"} {
		if strings.Contains(trace, pkg+" @") {
			t.Errorf("the init initialised %s, which it never uses", pkg)
		}
	}
	// The same binary as the CLI does initialise them: the check above can fail.
	cli := exec.Command(agentbox, "--help")
	cli.Env = []string{"GODEBUG=inittrace=1"}
	b, err := cli.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "internal/eval/report @") {
		t.Fatalf("agentbox --help: %v, and no trace of internal/eval/report: the check proves nothing\n%s", err, b)
	}
}

// TestRunRefusesStaleInit: agentbox beside an agentbox-init built from other sources
// (here: another build variant) fails the run (125) and says how to fix it, instead
// of running the sandbox under the other build's init. The installed pair runs.
func TestRunRefusesStaleInit(t *testing.T) {
	testenv.RequireRoot(t)
	if _, _, status := cli(t, "run", "--", "/bin/true"); status != 0 {
		t.Fatalf("agentbox run with its own agentbox-init: exit %d", status)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(agentbox)
	if err != nil {
		t.Fatal(err)
	}
	ab := filepath.Join(dir, "agentbox")
	if err := os.WriteFile(ab, b, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, nsinit.Argv0Init),
		"-ldflags=-X github.com/agentbox/agentbox/internal/sandbox/nsinit.buildVariant=stale", "../agentbox-init")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build a stale agentbox-init: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	run := exec.Command(ab, "run", "--", "/bin/echo", "ran")
	run.Stderr = &stderr
	out, err := run.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || len(out) != 0 || !strings.Contains(stderr.String(), "build both from one tree") {
		t.Fatalf("with a stale agentbox-init: %v, stdout %q, stderr %q; want exit 125 and how to fix it", err, out, stderr.String())
	}
}

// TestCLIStartCompilesNothing: agentbox's own packages compile their patterns and
// templates on first use, not at the start of every command (issue 16: they were
// ~7,000 allocations and a millisecond of every `agentbox run`). The package
// initialisation trace of `agentbox --version` counts their allocations.
func TestCLIStartCompilesNothing(t *testing.T) {
	cmd := exec.Command(agentbox, "--version")
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agentbox --version: %v\n%s", err, b)
	}
	total, pkgs := 0, 0
	var top string
	topN := 0
	for _, line := range strings.Split(string(b), "\n") {
		// init github.com/agentbox/agentbox/internal/x @1.2 ms, 0.01 ms clock, 432 bytes, 12 allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/agentbox/agentbox/") {
			continue
		}
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("unreadable trace line %q", line)
		}
		pkgs++
		total += n
		if n > topN {
			top, topN = f[1], n
		}
	}
	if pkgs < 10 {
		t.Fatalf("the trace names %d of agentbox's packages: it proves nothing\n%s", pkgs, b)
	}
	if total > 1000 {
		t.Errorf("agentbox's %d packages allocate %d times at start (most: %s, %d); compile patterns and templates on first use (sync.OnceValue)", pkgs, total, top, topN)
	}
}
