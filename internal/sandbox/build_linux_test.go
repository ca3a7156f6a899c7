package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/egress/egresstest"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestBuildRunnerDebian builds a spec in build sandboxes, for real: a Debian
// base bootstrapped from Debian's archive, an apt step that installs a package
// through the egress proxy's "debian" preset, and a run step, which runs as
// root of the build namespace and has no network. A sandbox on the result runs
// the installed program as the sandbox user.
func TestBuildRunnerDebian(t *testing.T) {
	if testing.Short() {
		t.Skip("bootstraps Debian and installs a package from the network (minutes)")
	}
	testenv.RequireRoot(t)
	_, err := exec.LookPath("mmdebstrap")
	testenv.Require(t, err == nil, "mmdebstrap (apt-get install mmdebstrap)")
	s, err := image.OpenStore(t.TempDir(), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := image.ParseSpec([]byte(`
base:
  debian: {suite: bookworm, variant: apt}
steps:
  - apt: [hello]
  - run: |
      id -u > /opt/built-by
      hello > /opt/greeting
      if getent hosts deb.debian.org || (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null; then echo network; fi > /opt/network
env: {LANG: C.UTF-8}
`))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	start := time.Now()
	rec, err := s.Build(t.Context(), spec, image.BuildOptions{Name: "hello", Runner: &BuildRunner{Output: &log, AllowPrivate: egresstest.ReservedPrefixes(t, "deb.debian.org")}, Log: &log})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	t.Logf("built in %v", time.Since(start).Round(time.Second))
	var hello string
	for _, p := range rec.Packages {
		if p.Name == "hello" {
			hello = p.Version
		}
	}
	if hello == "" {
		t.Errorf("the image's packages do not list hello: %v", rec.Packages)
	}
	im, err := s.Open("hello")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	r := runIn(t, Config{Image: im, Argv: []string{"sh", "-c", "hello; cat /opt/built-by /opt/greeting /opt/network; id -u"}})
	want := "Hello, world!\n0\nHello, world!\n1000\n"
	if r.exit.ExitCode != 0 || r.stdout != want {
		t.Errorf("in the built image: exit %+v, stdout %q, want %q; stderr %s", r.exit.ExitCode, r.stdout, want, r.stderr)
	}
	t.Run("go_modules", func(t *testing.T) { buildGoModules(t, s) })
	// The init's mount points are not part of the steps' layers.
	for _, l := range im.Layers[1:] {
		for _, p := range []string{"workspace", "dev", "etc/agentbox"} {
			if _, err := os.Lstat(l.Dir + "/" + p); err == nil {
				t.Errorf("layer %s holds the init's /%s", l.DiffID, p)
			}
		}
	}
}

// buildGoModules builds on the image "hello" of s: Debian's Go, then a
// go_modules step that downloads a module from the Go module proxy through the
// "go" egress preset. The egress proxy tunnels the step's TLS end to end; the
// test machine may reach the module proxy through a TLS interceptor of its own,
// whose CA its system bundle holds: the build trusts that bundle
// (BuildRunner.Trust, as template build --ca-file), which the image never gets.
// The test machine reaches no checksum database (GOSUMDB is off).
func buildGoModules(t *testing.T, s *image.Store) {
	bundle, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := ParseTrust(bundle)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := image.ParseSpec([]byte(`
base: {image: hello}
steps:
  - apt: [golang-go, ca-certificates]
  - go_modules: [golang.org/x/text@v0.14.0]
env: {GOSUMDB: "off", GOFLAGS: -modcacherw}
`))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	allow := append(egresstest.ReservedPrefixes(t, "deb.debian.org"), egresstest.ReservedPrefixes(t, "proxy.golang.org")...)
	if _, err := s.Build(t.Context(), spec, image.BuildOptions{Name: "gomod", Runner: &BuildRunner{Output: &log, AllowPrivate: allow, Trust: trust}, Log: &log}); err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	im, err := s.Open("gomod")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	r := runIn(t, Config{Image: im, Argv: []string{"sh", "-c", "head -1 /root/go/pkg/mod/golang.org/x/text@v0.14.0/go.mod"}})
	if r.exit.ExitCode != 0 || r.stdout != "module golang.org/x/text\n" {
		t.Errorf("the module in the image: exit %d, stdout %q, stderr %s", r.exit.ExitCode, r.stdout, r.stderr)
	}
	// The trusted certificates were the step's only: its layer holds no bundle.
	top := im.Layers[len(im.Layers)-1].Dir
	for _, p := range []string{"etc/agentbox", "etc/ssl/certs/ca-certificates.crt"} {
		if _, err := os.Lstat(filepath.Join(top, p)); err == nil {
			t.Errorf("the go_modules step's layer holds /%s", p)
		}
	}
}
