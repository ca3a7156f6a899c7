package image

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// importer starts the test binary as a second process importing source into the
// store at dir under name.
func importer(dir, source, name string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", dir, source, name)
	cmd.Env = append(os.Environ(), helperEnv+"=import")
	return cmd
}

// TestConcurrentImports: two processes importing the same image at once both
// succeed, and each layer is unpacked once and stored once.
func TestConcurrentImports(t *testing.T) {
	s := newStore(t)
	img, err := random.Image(8<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	src := writeDockerArchive(t, img)
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			outs[i], errs[i] = importer(s.dir, src, []string{"one", "two"}[i]).CombinedOutput()
		})
	}
	wg.Wait()
	want, _ := img.ConfigName()
	for i := range 2 {
		if errs[i] != nil || strings.TrimSpace(string(outs[i])) != want.String() {
			t.Errorf("importer %d: %v: %s", i, errs[i], outs[i])
		}
	}
	if n := layerCount(t, s); n != 3 {
		t.Errorf("%d layers, want 3", n)
	}
	tmpEmpty(t, s)
	for _, n := range []string{"one", "two"} {
		im, err := s.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		layers, _ := img.Layers()
		for i, l := range layers {
			checkLayer(t, im.Layers[i].Dir, l)
		}
		im.Close()
	}
}

// stallingRegistry serves a registry whose blob downloads of stall stop halfway
// until release is closed.
func stallingRegistry(t *testing.T, stall v1.Hash, release chan struct{}) *httptest.Server {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+stall.String()) {
			reg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		w.Header().Set("Content-Length", rec.Header().Get("Content-Length"))
		w.WriteHeader(rec.Code)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

// TestCrashLeavesNoLayer: an import killed in the middle of unpacking a layer
// publishes nothing; GC removes what it left; the next import succeeds.
func TestCrashLeavesNoLayer(t *testing.T) {
	s := newStore(t)
	img, err := random.Image(32<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	digest, _ := layers[0].Digest()
	srv := stallingRegistry(t, digest, make(chan struct{}))
	u, _ := url.Parse(srv.URL)
	ref, _ := name.ParseReference(u.Host + "/test/crash:v1")
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	cmd := importer(s.dir, "registry:"+ref.String(), "crash")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the importer has written part of the layer, then kill it.
	deadline := time.Now().Add(time.Minute)
	for !partlyUnpacked(s) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the importer wrote nothing in a minute: %s", out.Bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := layerCount(t, s); n != 0 {
		t.Errorf("%d layers published by a killed import", n)
	}
	if _, err := s.Open("crash"); err == nil {
		t.Error("the killed import's image opens")
	}
	if _, err := s.GC(t.Context(), GCOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpEmpty(t, s)
	src := writeDockerArchive(t, img)
	if _, err := s.Import(t.Context(), src, ImportOptions{Name: "crash"}); err != nil {
		t.Fatal(err)
	}
	im, err := s.Open("crash")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	checkLayer(t, im.Layers[0].Dir, layers[0])
}

// partlyUnpacked reports whether a temporary layer directory holds a file.
func partlyUnpacked(s *Store) bool {
	m, _ := filepath.Glob(filepath.Join(s.tmpDir(), "layer-*", "root", "*"))
	return len(m) > 0
}
