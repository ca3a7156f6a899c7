package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestImportSources imports one image from each kind of source: every source
// gives the same image id and the same unpacked layers.
func TestImportSources(t *testing.T) {
	s := newStore(t)
	img := randomImage(t, 3)
	want, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := writeLayout(t, map[string]v1.Image{"latest": img, "other": randomImage(t, 1)})

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	ref, err := name.ParseReference(u.Host + "/test/image:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	onlyLayout := writeLayout(t, map[string]v1.Image{"only": img})

	for _, c := range []struct{ name, src string }{
		{"docker", writeDockerArchive(t, img)},
		{"oci", "oci:" + layoutDir + ":latest"},
		{"oci-archive", "oci-archive:" + tarDir(t, onlyLayout)},
		{"registry", "registry:" + ref.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.Import(t.Context(), c.src, ImportOptions{Name: "img-" + c.name})
			if err != nil {
				t.Fatal(err)
			}
			if r.ID != want {
				t.Errorf("id %s, want %s", r.ID, want)
			}
			im, err := s.Open("img-" + c.name)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			layers, _ := img.Layers()
			if len(im.Layers) != len(layers) {
				t.Fatalf("%d layers, want %d", len(im.Layers), len(layers))
			}
			for i, l := range layers {
				checkLayer(t, im.Layers[i].Dir, l)
			}
		})
	}
	if n := layerCount(t, s); n != 3 {
		t.Errorf("%d layers stored, want 3 (one per distinct layer)", n)
	}
	tmpEmpty(t, s)
	if _, err := s.Import(t.Context(), "oci:"+layoutDir, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "pick one") {
		t.Errorf("ambiguous layout: err = %v", err)
	}
	if _, err := s.Import(t.Context(), "oci:"+layoutDir+":nope", ImportOptions{}); err == nil || !strings.Contains(err.Error(), "latest") {
		t.Errorf("unknown ref: err = %v, want the names listed", err)
	}
}

// TestPlainHTTPOnlyToLoopback: the registry transport refuses plain HTTP to any
// host but loopback (go-containerregistry itself would fall back to HTTP for
// private addresses), and passes HTTPS and loopback through.
func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	var seen []string
	tr := loopbackOnlyHTTP{base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.URL.String())
		return nil, errors.New("not dialled in this test")
	})}
	for u, allowed := range map[string]bool{
		"http://10.1.2.3:5000/v2/":     false,
		"http://192.168.0.7/v2/":       false,
		"http://registry.example/v2/":  false,
		"http://[::ffff:10.0.0.1]/v2/": false,
		"https://registry.example/v2/": true,
		"http://127.0.0.1:5000/v2/":    true,
		"http://[::1]:5000/v2/":        true,
		"http://localhost:5000/v2/":    true,
	} {
		seen = nil
		req, _ := http.NewRequest("GET", u, nil)
		_, err := tr.RoundTrip(req)
		if got := len(seen) == 1; got != allowed {
			t.Errorf("%s: passed %v, want %v (%v)", u, got, allowed, err)
		}
		if !allowed && (err == nil || !strings.Contains(err.Error(), "refused")) {
			t.Errorf("%s: err = %v", u, err)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestDedup: two images on one base share its layers on disk.
func TestDedup(t *testing.T) {
	s := newStore(t)
	base := randomImage(t, 2)
	baseLayers, _ := base.Layers()
	a := imageOf(t, v1.Config{}, append(baseLayers, randomLayer(t))...)
	b := imageOf(t, v1.Config{}, append(baseLayers, randomLayer(t))...)
	for n, img := range map[string]v1.Image{"a": a, "b": b} {
		if _, err := s.Import(t.Context(), writeDockerArchive(t, img), ImportOptions{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if n := layerCount(t, s); n != 4 {
		t.Errorf("%d layers stored, want 4 (2 shared + 1 each)", n)
	}
	ia, err := s.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close()
	ib, err := s.Open("b")
	if err != nil {
		t.Fatal(err)
	}
	defer ib.Close()
	for i := range 2 {
		if ia.Layers[i].Dir != ib.Layers[i].Dir {
			t.Errorf("layer %d: %s and %s, want one directory", i, ia.Layers[i].Dir, ib.Layers[i].Dir)
		}
	}
	if ia.Layers[2].Dir == ib.Layers[2].Dir {
		t.Error("the top layers share a directory")
	}
}

// TestDigestMismatch: a layer that does not hash to its diff_id is not published.
func TestDigestMismatch(t *testing.T) {
	s := newStore(t)
	img := randomImage(t, 1)
	cf, _ := img.ConfigFile()
	cf.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	bad, err := mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Import(t.Context(), writeDockerArchive(t, bad), ImportOptions{Name: "bad"})
	var de *DigestError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a DigestError", err)
	}
	if n := layerCount(t, s); n != 0 {
		t.Errorf("%d layers published", n)
	}
	tmpEmpty(t, s)
	if _, err := s.Open("bad"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open: %v, want ErrNotFound", err)
	}
}

// TestOpenAndGC: Remove forgets a name; GC frees what no name, open image or
// cache entry holds, and nothing else.
func TestOpenAndGC(t *testing.T) {
	s := newStore(t)
	base := randomImage(t, 1)
	baseLayers, _ := base.Layers()
	a := imageOf(t, v1.Config{}, append(baseLayers, randomLayer(t))...)
	b := imageOf(t, v1.Config{}, append(baseLayers, randomLayer(t))...)
	for n, img := range map[string]v1.Image{"a": a, "b": b} {
		if _, err := s.Import(t.Context(), writeDockerArchive(t, img), ImportOptions{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove: %v, want ErrNotFound", err)
	}
	res, err := s.GC(t.Context(), GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Images != 1 || res.Layers != 1 || layerCount(t, s) != 2 {
		t.Errorf("GC %+v, %d layers left; want a's image and its own layer gone", res, layerCount(t, s))
	}
	// An open image keeps its layers, with no name left.
	ib, err := s.Open("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if res, err = s.GC(t.Context(), GCOptions{}); err != nil || res.Layers != 0 {
		t.Fatalf("GC with b open: %+v, %v", res, err)
	}
	for _, l := range ib.Layers {
		if _, err := os.Stat(filepath.Join(l.Dir)); err != nil {
			t.Errorf("open image's layer: %v", err)
		}
	}
	ib.Close()
	if res, err = s.GC(t.Context(), GCOptions{}); err != nil || res.Layers != 2 || res.Images != 1 {
		t.Fatalf("GC after Close: %+v, %v", res, err)
	}
	if n := layerCount(t, s); n != 0 {
		t.Errorf("%d layers left", n)
	}
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Errorf("List: %v, %v", l, err)
	}
}

// TestConfigDigestMismatch: a layout whose config blob was changed after its
// manifest named it is refused.
func TestConfigDigestMismatch(t *testing.T) {
	s := newStore(t)
	img := randomImage(t, 1)
	dir := writeLayout(t, map[string]v1.Image{"x": img})
	cfg, _ := img.ConfigName()
	p := filepath.Join(dir, "blobs", "sha256", cfg.Hex)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(`"rootfs"`), []byte(`"rootfs" `), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Import(t.Context(), "oci:"+dir, ImportOptions{})
	var de *DigestError
	if !errors.As(err, &de) || de.What != "image config" {
		t.Fatalf("err = %v, want the config's DigestError", err)
	}
}

// TestHostileOCIArchive: an OCI archive's entries other than the layout's own
// names are never written, whatever they are called.
func TestHostileOCIArchive(t *testing.T) {
	s := newStore(t)
	base := t.TempDir()
	sentinel := filepath.Join(base, "sentinel")
	os.Mkdir(sentinel, 0o755)
	os.WriteFile(filepath.Join(sentinel, "file"), []byte("original"), 0o644)
	before := testenv.TreeHash(t, sentinel)
	layoutTar, err := os.ReadFile(tarDir(t, writeLayout(t, map[string]v1.Image{"x": randomImage(t, 1)})))
	if err != nil {
		t.Fatal(err)
	}
	evil := mkTar(t, reg("../../sentinel/file", "pwned"), reg("blobs/sha256/../../../sentinel/file", "pwned"),
		symlink("blobs/sha256/"+strings.Repeat("a", 64), filepath.Join(sentinel, "file")),
		reg(filepath.Join(sentinel, "file"), "pwned"), reg("manifest.json", "{}"))
	// The evil entries first, then the real layout (tar end marker dropped).
	archive := filepath.Join(base, "evil.tar")
	if err := os.WriteFile(archive, append(evil[:len(evil)-1024], layoutTar...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Import(t.Context(), "oci-archive:"+archive, ImportOptions{Name: "evil"})
	if err == nil || !errors.Is(err, ErrUnsafe) {
		t.Errorf("err = %v, want ErrUnsafe for the \"..\" entry", err)
	}
	if testenv.TreeHash(t, sentinel) != before {
		t.Error("the directory beside the archive changed")
	}
	tmpEmpty(t, s)
}

// TestHugeConfigRefused: a manifest announcing a huge config is refused before
// the config is read into memory.
func TestHugeConfigRefused(t *testing.T) {
	s := newStore(t)
	img := randomImage(t, 1)
	dir := writeLayout(t, map[string]v1.Image{"x": img})
	d, _ := img.Digest()
	cfg, _ := img.ConfigName()
	p := filepath.Join(dir, "blobs", "sha256", d.Hex)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	old := fmt.Sprintf(`"size":%d,"digest":"%s"`, m.Config.Size, cfg)
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("manifest %s has no %s", b, old)
	}
	b = bytes.Replace(b, []byte(old), []byte(fmt.Sprintf(`"size":%d,"digest":"%s"`, int64(1)<<40, cfg)), 1)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(t.Context(), "oci:"+dir, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("err = %v, want the config's size refused", err)
	}
}
