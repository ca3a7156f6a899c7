package runner

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/gvisor"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// start launches the command at the spec's isolation level.
func start(s Spec, io stdio, res *Result) (child, error) {
	// Descriptors agentbox itself inherited without close-on-exec must not reach the
	// command: Go opens everything with O_CLOEXEC, so this only touches strays.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return nil, fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	switch s.Isolation {
	case IsolationProcess:
		return startProcess(s, io)
	case IsolationNamespace:
		return startNamespace(s, io, res)
	case IsolationGvisor:
		return startGvisor(s, io)
	}
	return nil, fmt.Errorf("isolation %q is not supported", s.Isolation)
}

// startIn returns the starter of RunIn for sb, and its level.
func startIn(sb Persistent) (starter, Isolation) {
	switch sb := sb.(type) {
	case *gvisor.Env:
		return startInGvisor(sb), IsolationGvisor
	case *sandbox.Sandbox:
		return startInNamespace(sb), IsolationNamespace
	}
	return func(Spec, stdio, *Result) (child, error) {
		return nil, fmt.Errorf("runner: %T is no sandbox", sb)
	}, IsolationNamespace
}

// createOutputFile creates path afresh for a full output stream. It refuses to follow a
// symbolic link planted at path, so a sandbox cannot redirect agentbox's writes.
func createOutputFile(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create output file %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}
