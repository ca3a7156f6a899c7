//go:build !linux

package image

import "context"

func (s *Store) bootstrap(ctx context.Context, d Debian) (*Record, error) { return nil, ErrUnsupported }

func (s *Store) mmdebstrap(ctx context.Context, d Debian) (LayerInfo, error) {
	return LayerInfo{}, ErrUnsupported
}
