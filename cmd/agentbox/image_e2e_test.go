package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRunTemplate: agentbox run --template runs the command on the image of
// that name in the store under --state-dir, with the image's environment and
// working directory and none of the host's system directories; an unknown
// template is a clear error.
func TestRunTemplate(t *testing.T) {
	testenv.RequireRoot(t)
	state := t.TempDir()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte(`package main
import ("fmt"; "os")
func main() {
	wd, _ := os.Getwd()
	_, err := os.Stat("/usr/bin/sh")
	fmt.Println(os.Getenv("FROM_IMAGE"), wd, os.IsNotExist(err), os.Getuid())
}`), 0o644)
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/hello", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(prog))},
		{Name: "srv/", Typeflag: tar.TypeDir, Mode: 0o755},
	} {
		tw.WriteHeader(h)
		if h.Size > 0 {
			tw.Write(prog)
		}
	}
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err == nil {
		img, err = mutate.Config(img, v1.Config{Env: []string{"FROM_IMAGE=yes"}, WorkingDir: "/srv"})
	}
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.tar")
	if err := tarball.WriteToFile(archive, name.MustParseReference("agentbox.test/hello:1"), img); err != nil {
		t.Fatal(err)
	}
	s, err := image.OpenStore(image.StoreDir(state), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(t.Context(), "docker-archive:"+archive, image.ImportOptions{Name: "hello"}); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, status := cli(t, "run", "--state-dir", state, "--template", "hello", "--workspace", dir, "--", "/bin/hello")
	if status != 0 || stdout != "yes /srv true 1000\n" {
		t.Errorf("run --template hello: status %d, stdout %q, want %q; stderr %s", status, stdout, "yes /srv true 1000\n", stderr)
	}
	_, stderr, status = cli(t, "run", "--state-dir", state, "--template", "nope", "--", "/bin/hello")
	hint := "`agentbox template ls --state-dir " + state + "` lists them"
	if status != 125 || !strings.Contains(stderr, "--template nope: no such template") || !strings.Contains(stderr, hint) {
		t.Errorf("run --template nope: status %d, stderr %q; want 125 and a clear error with the hint %q", status, stderr, hint)
	}
}
