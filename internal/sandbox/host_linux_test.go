package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// hostMarker is a path under the host's /usr that no host has: the tests below
// try to create it from build steps and sandboxes.
const hostMarker = "/usr/local/share/agentbox-host-base-test"

// TestHostBase builds a spec on the host's system directories, for real: a run
// step (root of the build namespace, writing under /usr/local and /opt and
// deleting a host file from its own view) and a copy step. A sandbox on the
// result runs the host's tools and sees the steps' files; the host's
// directories are never written, by the build or by the sandbox.
func TestHostBase(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := os.Lstat(hostMarker); err == nil {
		t.Fatalf("%s exists on the host: remove it", hostMarker)
	}
	victim := hostVictim(t)
	before := fileDigest(t, victim)
	trueBefore, trueMode := fileDigest(t, "/usr/bin/true"), fileMode(t, "/usr/bin/true")
	bundle := "/etc/ssl/certs/ca-certificates.crt"
	var bundleBefore string
	if _, err := os.Stat(bundle); err == nil {
		bundleBefore = fileDigest(t, bundle)
	}
	s, err := image.OpenStore(t.TempDir(), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("copied in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := image.ParseSpec([]byte(`
base: {host: true}
steps:
  - run: |
      mkdir -p /opt/tool /usr/local/share
      echo built > /opt/tool/out
      id -u > /opt/tool/uid
      echo step > ` + hostMarker + `
      rm -f ` + victim + `
      test ! -e ` + victim + `
      find /root /home /work -mindepth 1 2>/dev/null | wc -l > /opt/tool/private
  - copy: {src: notes.txt, dst: /opt/tool/notes.txt}
env: {LANG: C.UTF-8}
workdir: /workspace
`))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rec, err := s.Build(t.Context(), spec, image.BuildOptions{Name: "onhost", Dir: dir, Runner: &BuildRunner{Output: &log}, Log: &log})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	if !rec.Host || !strings.HasPrefix(rec.Build.Base, "host sha256:") {
		t.Errorf("record: host %v, base %q", rec.Host, rec.Build.Base)
	}
	if _, err := os.Stat("/var/lib/dpkg/status"); err == nil && len(rec.Packages) == 0 {
		t.Errorf("the record lists none of the host's packages")
	}
	assertHostUntouched(t, victim, before)
	im, err := s.Open("onhost")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	// The run step's layer holds what it wrote, as layer files: /opt, the
	// marker under /usr, the whiteout of the deleted host file; not the init's
	// mount points, not the host's directories.
	layer := im.Layers[0].Dir
	for _, p := range []string{"opt/tool/out", strings.TrimPrefix(hostMarker, "/"), strings.TrimPrefix(victim, "/")} {
		if _, err := os.Lstat(filepath.Join(layer, p)); err != nil {
			t.Errorf("the run step's layer lacks /%s: %v", p, err)
		}
	}
	for _, p := range []string{"etc", "tmp", "workspace", "dev", "usr/bin", "bin"} {
		if _, err := os.Lstat(filepath.Join(layer, p)); err == nil {
			out, _ := exec.Command("ls", "-laR", filepath.Join(layer, p)).CombinedOutput()
			t.Errorf("the run step's layer holds /%s:\n%s", p, out)
		}
	}

	script := `set -e
cd /opt/tool && cat out uid notes.txt private ` + hostMarker + `
test ! -e ` + victim + ` && echo victim-gone
sh -c 'echo $0' from-the-host-sh
cd / && pwd
# A sandbox's writes land in its private upper layer, never on the host.
echo sandbox > ` + hostMarker + `
echo new > /usr/local/share/agentbox-host-base-new
: > /usr/bin/agentbox-host-base-new
cat ` + hostMarker + `
if ls /root/ /work/ 2>/dev/null; then echo host-private-visible; fi
chmod 0777 /usr/bin/true
echo appended >> /usr/bin/true
ln /usr/bin/true /opt/tool/hard 2>/dev/null || true
if echo x >> /etc/ssl/certs/ca-certificates.crt 2>/dev/null; then echo host-etc-written; fi
`
	r := runIn(t, Config{Image: im, Argv: []string{"sh", "-c", script}})
	want := "built\n0\ncopied in\n0\nstep\nvictim-gone\nfrom-the-host-sh\n/\nsandbox\n"
	if r.exit.ExitCode != 0 || r.stdout != want {
		t.Errorf("on the host base: exit %d, stdout %q, want %q; stderr %s", r.exit.ExitCode, r.stdout, want, r.stderr)
	}
	assertHostUntouched(t, victim, before)
	if got, mode := fileDigest(t, "/usr/bin/true"), fileMode(t, "/usr/bin/true"); got != trueBefore || mode != trueMode {
		t.Errorf("the sandbox changed the host's /usr/bin/true: %s %v, was %s %v", got, mode, trueBefore, trueMode)
	}
	if bundleBefore != "" && fileDigest(t, bundle) != bundleBefore {
		t.Errorf("the sandbox changed the host's %s", bundle)
	}
	for _, p := range []string{"/usr/local/share/agentbox-host-base-new", "/usr/bin/agentbox-host-base-new"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox created %s on the host", p)
		}
	}
	for _, l := range im.Layers {
		if _, err := os.Lstat(filepath.Join(l.Dir, "usr/local/share/agentbox-host-base-new")); err == nil {
			t.Errorf("the sandbox wrote into layer %s", l.DiffID)
		}
	}

	// The second build is the first's: every step from the cache.
	rec2, err := s.Build(t.Context(), spec, image.BuildOptions{Name: "onhost", Dir: dir, Runner: &BuildRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	if rec2.ID != rec.ID || !rec2.Build.Steps[0].Cached || !rec2.Build.Steps[1].Cached {
		t.Errorf("second build: id %s (first %s), steps %+v", rec2.ID, rec.ID, rec2.Build.Steps)
	}
}

// hostVictim returns a host file of /usr the build deletes in its own view.
func hostVictim(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/share/common-licenses/GPL-3", "/usr/share/base-files/motd", "/usr/bin/true"} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	testenv.Require(t, false, "a regular file under /usr to delete in the build's view")
	return ""
}

func fileMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func fileDigest(t *testing.T, p string) string {
	t.Helper()
	out, err := exec.Command("sha256sum", p).Output()
	if err != nil {
		t.Fatalf("sha256sum %s: %v", p, err)
	}
	return string(out)
}

func assertHostUntouched(t *testing.T, victim, digest string) {
	t.Helper()
	if _, err := os.Lstat(hostMarker); err == nil {
		os.Remove(hostMarker)
		t.Errorf("%s was created on the host", hostMarker)
	}
	if got := fileDigest(t, victim); got != digest {
		t.Errorf("host file %s changed: %s, was %s", victim, got, digest)
	}
}
