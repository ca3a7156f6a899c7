//go:build !linux

package runner

import (
	"errors"
	"os"
)

// ErrUnsupported is returned on systems other than Linux.
var ErrUnsupported = errors.New("agentbox runs commands only on Linux")

func start(Spec, stdio, *Result) (child, error) { return nil, ErrUnsupported }

func startIn(Persistent) (starter, Isolation) { return start, IsolationNamespace }

func createOutputFile(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	return nil, ErrUnsupported
}
