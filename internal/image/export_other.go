//go:build !linux

package image

import (
	"context"
	"io"
)

func exportUpper(ctx context.Context, dir string, w io.Writer) error { return ErrUnsupported }
