package env

import (
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/image"
)

// openTemplate opens the image an environment's root comes from (nil for
// none). The open image keeps its layers from GC until it is closed, which
// teardown does after the sandbox is gone: a template removed or rebuilt
// meanwhile leaves running environments as they were.
func (m *Manager) openTemplate(name string) (*image.Image, error) {
	if name == "" {
		return nil, nil
	}
	if m.cfg.Images == nil {
		return nil, fmt.Errorf("%w: template %q: this server has no image store", ErrInvalid, name)
	}
	if err := image.CheckName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	im, err := m.cfg.Images.Open(name)
	if errors.Is(err, image.ErrNotFound) {
		return nil, fmt.Errorf("%w: no template %q (agentbox template ls lists them)", ErrInvalid, name)
	}
	if err != nil {
		return nil, fmt.Errorf("env: template %q: %w", name, err)
	}
	return im, nil
}
