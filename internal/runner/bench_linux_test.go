package runner

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
)

// The floor: fork+exec+wait with nothing else.
func BenchmarkForkExecTrue(b *testing.B) {
	for b.Loop() {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			b.Fatal(err)
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
}

// What most Go programs do: os/exec with captured output.
func BenchmarkOSExecTrue(b *testing.B) {
	for b.Loop() {
		if _, err := exec.Command("/bin/true").Output(); err != nil {
			b.Fatal(err)
		}
	}
}

// agentbox's process level: session, rlimits before exec, captured output, timeout,
// confirmed cleanup.
func BenchmarkRunTrueProcess(b *testing.B) {
	dir := b.TempDir()
	spec := Spec{Argv: []string{"/bin/true"}, Isolation: IsolationProcess, Workspace: dir}
	for b.Loop() {
		res, err := Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}

// agentbox's namespace level through the runner: sandbox start, command, confirmed
// cgroup-wide cleanup and removal.
func BenchmarkRunTrueNamespace(b *testing.B) {
	spec := Spec{Argv: []string{"/bin/true"}, Isolation: IsolationNamespace}
	for b.Loop() {
		res, err := Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}
