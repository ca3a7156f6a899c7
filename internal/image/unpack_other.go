//go:build !linux

package image

import (
	"context"
	"io"
)

func unpack(ctx context.Context, r io.Reader, dir string, lim Limits) (LayerInfo, error) {
	return LayerInfo{}, ErrUnsupported
}
