package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
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
