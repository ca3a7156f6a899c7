package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestDebianBuild builds a spec on a small Debian base bootstrapped from Debian's
// archive (the one network this test reaches), twice: the first build bootstraps
// (about a minute), the second comes from the cache. The image records its
// packages, and a program of it runs in a sandbox-like mount.
func TestDebianBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("bootstraps Debian from the network (about a minute)")
	}
	requireOverlayMount(t)
	_, err := exec.LookPath("mmdebstrap")
	testenv.Require(t, err == nil, "mmdebstrap (apt-get install mmdebstrap)")
	s := newStore(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greeting"), []byte("hello from the spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseSpec([]byte(`
base:
  debian: {suite: bookworm, variant: essential, include: [hello], source_date_epoch: 1700000000}
steps:
  - copy: {src: greeting, dst: /etc/greeting}
env: {LANG: C.UTF-8}
`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := s.Build(t.Context(), spec, BuildOptions{Name: "deb", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(start)
	start = time.Now()
	again, err := s.Build(t.Context(), spec, BuildOptions{Name: "deb", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	warm := time.Since(start)
	if !again.Build.BaseCached || !again.Build.Steps[0].Cached || again.ID != r.ID {
		t.Errorf("second build: base cached %v, step cached %v, id %s want %s", again.Build.BaseCached, again.Build.Steps[0].Cached, again.ID, r.ID)
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
	info, err := s.Inspect("deb")
	if err != nil {
		t.Fatal(err)
	}
	base := info.Layers[0]
	t.Logf("bookworm essential + hello: build cold %v, cached %v; %d packages (hello %s, libc6 %s); base layer %d entries, %d bytes, %d adjusted (%v)",
		cold.Round(time.Millisecond), warm.Round(time.Millisecond), len(r.Packages), hello, libc, base.Entries, base.Bytes, base.Adjusted, base.Adjustments[:min(3, len(base.Adjustments))])
	im, err := s.Open("deb")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	rep := mountImage(t, im, 0, []string{"/etc/greeting"}, nil, "/usr/bin/hello")
	if !strings.Contains(rep.Exec, "Hello, world!") || rep.Files["/etc/greeting"].Content != "hello from the spec\n" {
		t.Errorf("in the image: hello said %q, /etc/greeting %+v", rep.Exec, rep.Files["/etc/greeting"])
	}
}
