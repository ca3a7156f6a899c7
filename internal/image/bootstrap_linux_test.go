package image

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestDebianBootstrap bootstraps a small Debian root from Debian's archive (the
// one network this test reaches), records its packages, and runs a program of it
// in a sandbox-like mount. It takes about a minute.
func TestDebianBootstrap(t *testing.T) {
	if testing.Short() {
		t.Skip("bootstraps Debian from the network (about a minute)")
	}
	requireOverlayMount(t)
	_, err := exec.LookPath("mmdebstrap")
	testenv.Require(t, err == nil, "mmdebstrap (apt-get install mmdebstrap)")
	s := newStore(t)
	epoch := int64(1700000000)
	r, err := s.bootstrapLocked(t, Debian{Suite: "bookworm", Variant: "essential", Include: []string{"hello"}, SourceDateEpoch: &epoch})
	if err != nil {
		t.Fatal(err)
	}
	var hello, libc string
	for _, p := range r.Packages {
		switch p.Name {
		case "hello":
			hello = p.Version
		case "libc6":
			libc = p.Version
		}
	}
	if hello == "" || libc == "" {
		t.Fatalf("packages %v: want hello and libc6 with versions", r.Packages)
	}
	if err := s.setName("deb", r.ID); err != nil {
		t.Fatal(err)
	}
	im, err := s.Open("deb")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	info, err := s.Inspect("deb")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bookworm essential + hello: %d packages, %d entries, %d bytes, %d adjusted (%v)",
		len(r.Packages), info.Layers[0].Entries, info.Layers[0].Bytes, info.Layers[0].Adjusted, info.Layers[0].Adjustments[:min(3, len(info.Layers[0].Adjustments))])
	rep := mountImage(t, im, 0, []string{"/usr/bin/hello", "/var/lib/dpkg/status"}, nil, "/usr/bin/hello")
	if !strings.Contains(rep.Exec, "Hello, world!") {
		t.Errorf("hello in the image: %q", rep.Exec)
	}
}

// bootstrapLocked runs a bootstrap under the store lock, as Import does.
func (s *Store) bootstrapLocked(t *testing.T, d Debian) (*Record, error) {
	unlock, err := s.lock(shared)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	return s.bootstrap(t.Context(), d)
}
