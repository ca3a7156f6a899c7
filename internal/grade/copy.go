package grade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/workspace"
)

// copyHidden places every hidden file of t, read from dir (t.Hidden, or a copy
// with canaries), at its path in the environment's repository, replacing (never
// following) whatever the patch left there.
func copyHidden(ctx context.Context, svc Service, owner env.Owner, id string, t *task.Task, dir string) error {
	for _, rel := range t.HiddenFiles {
		if err := svc.Remove(ctx, owner, id, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clear %s: %w", rel, err)
		}
	}
	return upload(ctx, svc, owner, id, ".", dir, t.HiddenFiles)
}

// upload streams the named files (relative to dir, slash-separated; regular files
// and symlinks) as one tar into the environment directory dst.
func upload(ctx context.Context, svc Service, owner env.Owner, id, dst, dir string, names []string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(workspace.TarFiles(pw, dir, names)) }()
	err := svc.Upload(ctx, owner, id, dst, pr)
	pr.CloseWithError(errors.New("upload ended"))
	if err != nil {
		return fmt.Errorf("upload to %s: %w", dst, err)
	}
	return nil
}
