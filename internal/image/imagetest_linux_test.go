package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/agentbox/agentbox/internal/testenv"
)

// newStore opens a store in a fresh directory.
func newStore(t *testing.T) *Store {
	t.Helper()
	testenv.RequireRoot(t)
	s, err := OpenStore(filepath.Join(t.TempDir(), "image"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// layerOf makes a gzip-compressed layer of an archive.
func layerOf(t testing.TB, archive []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(archive)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// imageOf stacks layers on an empty image with config c.
func imageOf(t testing.TB, c v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture, cf.Config = "linux", "amd64", c
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func randomImage(t testing.TB, layers int64) v1.Image {
	t.Helper()
	img, err := random.Image(4096, layers)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func randomLayer(t testing.TB) v1.Layer {
	t.Helper()
	l, err := random.Layer(4096, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// writeDockerArchive writes img as a `docker save` archive and returns its source.
func writeDockerArchive(t testing.TB, img v1.Image) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.tar")
	tag, err := name.NewTag("agentbox.test/image:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(p, tag, img); err != nil {
		t.Fatal(err)
	}
	return "docker-archive:" + p
}

// writeLayout writes imgs into a new OCI layout, each annotated with its ref name.
func writeLayout(t testing.TB, imgs map[string]v1.Image) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for ref, img := range imgs {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: ref})); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tarDir archives dir with the host's tar (an OCI archive is a layout in a tar).
func tarDir(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "oci.tar")
	if out, err := exec.Command("tar", "-C", dir, "-cf", p, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	return p
}

// checkLayer compares a published layer's tree with the regular files of its
// archive.
func checkLayer(t testing.TB, dir string, l v1.Layer) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		want, _ := io.ReadAll(tr)
		p, _ := cleanName(h.Name)
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("layer file %s: %d bytes, %v; want the archive's %d bytes", h.Name, len(got), err, len(want))
		}
		n++
	}
	if n == 0 {
		t.Errorf("layer archive has no regular file to compare")
	}
}

// layerCount is the number of published layers.
func layerCount(t testing.TB, s *Store) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.LayersDir(), "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// tmpEmpty fails unless the store's temporary directory is empty.
func tmpEmpty(t testing.TB, s *Store) {
	t.Helper()
	ents, err := os.ReadDir(s.tmpDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("store tmp holds %v", ents)
	}
}
