//go:build !linux

package sandbox

import (
	"context"

	"github.com/agentbox/agentbox/internal/image"
)

// RunStep is unsupported off Linux.
func (r *BuildRunner) RunStep(ctx context.Context, root image.Root, step image.Step, upper, work string) error {
	return ErrUnsupported
}
