package nsinit

import (
	"slices"
	"testing"

	"github.com/agentbox/agentbox/internal/image"
)

// TestHostBaseIsTheHostRoot: an image over the host (image.HostDirs and
// image.HostEtc, whose identity is the build cache's key) holds what the
// namespace sandbox shows of the host, no more and no less.
func TestHostBaseIsTheHostRoot(t *testing.T) {
	if !slices.Equal(image.HostDirs, systemDirs) {
		t.Errorf("image.HostDirs %v, the namespace sandbox mirrors %v", image.HostDirs, systemDirs)
	}
	if !slices.Equal(image.HostEtc, etcHost) {
		t.Errorf("image.HostEtc %v, the namespace sandbox mirrors %v", image.HostEtc, etcHost)
	}
}
