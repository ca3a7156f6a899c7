package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// benchLayer is a layer archive of about size bytes: files of 1 KiB to 1 MiB
// (log-uniform, as in a system image), half of each file random and half
// repeated, so that it compresses about 2:1 like binaries do.
func benchLayer(tb testing.TB, seed uint64, size int64) v1.Layer {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var total int64
	for i := 0; total < size; i++ {
		n := int64(1024) << rng.IntN(11)
		data := make([]byte, n)
		for j := range data[:n/2] {
			data[j] = byte(rng.Uint32())
		}
		copy(data[n/2:], data[:n/2])
		name := fmt.Sprintf("usr/lib/l%d/d%02d/f%05d", seed, i%64, i)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: n, ModTime: testTime}); err != nil {
			tb.Fatal(err)
		}
		tw.Write(data)
		total += n
	}
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// bench500 is a 500 MB image of five 100 MB layers, and a second image on the
// same four bottom layers with its own top layer.
func bench500(tb testing.TB) (a, b string) {
	var base []v1.Layer
	for i := range 4 {
		base = append(base, benchLayer(tb, uint64(i), 100<<20))
	}
	a = writeDockerArchive(tb, imageOf(tb, v1.Config{}, append(base, benchLayer(tb, 10, 100<<20))...))
	b = writeDockerArchive(tb, imageOf(tb, v1.Config{}, append(base, benchLayer(tb, 11, 100<<20))...))
	return a, b
}

// BenchmarkImport500MB imports a 500 MB image into an empty store, then a second
// image sharing its four bottom layers; it reports the unpack rate, the disk the
// first image takes, and what the second adds.
//
//	go test -run XXX -bench Import500MB -benchtime 3x ./internal/image/
func BenchmarkImport500MB(b *testing.B) {
	requireOverlayMount(b)
	a, second := bench500(b)
	var first, shared time.Duration
	var diskA, diskB int64
	for i := 0; b.Loop(); i++ {
		s, err := OpenStore(filepath.Join(b.TempDir(), fmt.Sprint(i)), Options{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := s.Import(b.Context(), a, ImportOptions{Name: "a"}); err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		diskA += diskUsage(b, s.LayersDir())
		start = time.Now()
		if _, err := s.Import(b.Context(), second, ImportOptions{Name: "b"}); err != nil {
			b.Fatal(err)
		}
		shared += time.Since(start)
		diskB += diskUsage(b, s.LayersDir())
		os.RemoveAll(s.dir)
	}
	n := float64(b.N)
	b.ReportMetric(first.Seconds()/n, "s-first-import")
	b.ReportMetric(500/(first.Seconds()/n), "MB/s")
	b.ReportMetric(float64(diskA)/n/1e6, "MB-disk-first")
	b.ReportMetric(shared.Seconds()/n, "s-second-import")
	b.ReportMetric(float64(diskB-diskA)/n/1e6, "MB-disk-added-by-second")
}

// BenchmarkMount compares mounting a tiny image and the 500 MB one as sandboxes
// will (an overlay of its layers with a private upper layer), 50 at once: the
// cost does not depend on the image's size, and 50 environments on one image
// use its layers' disk once plus their (empty) upper layers.
//
//	go test -run XXX -bench Mount -benchtime 3x ./internal/image/
func BenchmarkMount(b *testing.B) {
	requireOverlayMount(b)
	a, _ := bench500(b)
	s, err := OpenStore(filepath.Join(b.TempDir(), "store"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	tiny := writeDockerArchive(b, imageOf(b, v1.Config{}, layerOf(b, mkTar(b, reg("etc/hostname", "tiny")))))
	for name, src := range map[string]string{"tiny": tiny, "500mb": a} {
		if _, err := s.Import(b.Context(), src, ImportOptions{Name: name}); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"tiny", "500mb"} {
		b.Run(name, func(b *testing.B) {
			im, err := s.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			defer im.Close()
			var mount time.Duration
			var upper int64
			for b.Loop() {
				rep := mountImageN(b, im, 0, 50, nil, nil, "")
				mount += time.Duration(rep.MountNS)
				upper += rep.UpperBytes
			}
			b.ReportMetric(float64(mount.Microseconds())/float64(b.N)/50, "µs/mount")
			b.ReportMetric(float64(upper)/float64(b.N)/50, "upper-bytes/env")
			b.ReportMetric(float64(diskUsage(b, s.LayersDir()))/1e6, "MB-layers-total")
		})
	}
}
