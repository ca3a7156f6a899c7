package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// bigImage imports an image of about mb MiB in 5 layers of 512 KiB files, with
// the host's /bin/true and the libraries it loads in the bottom layer, so the
// same program runs on it as on the host root.
func bigImage(b *testing.B, mb int) *image.Image {
	b.Helper()
	testenv.RequireRoot(b)
	base := []testFile{{name: "usr/", dir: true}, {name: "usr/bin/", dir: true},
		{name: "lib/", dir: true}, {name: "lib/x86_64-linux-gnu/", dir: true}, {name: "lib64/", dir: true}}
	for _, f := range []struct{ host, name string }{
		{"/usr/bin/true", "usr/bin/true"},
		{"/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"},
		{"/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"},
	} {
		c, err := os.ReadFile(f.host)
		if err != nil {
			b.Skipf("host program for the benchmark: %v", err)
		}
		base = append(base, testFile{name: f.name, mode: 0o755, content: string(c)})
	}
	chunk := strings.Repeat("agentbox", 64<<10) // 512 KiB
	layers := [][]testFile{base}
	per := mb * 2 / 5
	for l := range 5 {
		files := []testFile{{name: "data/", dir: true}, {name: fmt.Sprintf("data/%d/", l), dir: true}}
		for i := range per {
			files = append(files, testFile{name: fmt.Sprintf("data/%d/%04d", l, i), content: chunk})
		}
		layers = append(layers, files)
	}
	_, im := testImage(b, v1.Config{}, layers...)
	// What making it took (archives in memory, dirty pages) must not weigh on
	// the starts: every clone copies the page tables of this process.
	layers = nil
	debug.FreeOSMemory()
	syscall.Sync()
	return im
}

// diskUsage is what dir's files take on disk (allocated blocks).
func diskUsage(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkImageStart: Start to Wait of /usr/bin/true in a sandbox on the host
// root and of the same program in a sandbox on a 500 MiB image (6 layers),
// alternating, so both see the same noise; it reports both medians and their
// ratio (bench/image.sh).
func BenchmarkImageStart(b *testing.B) {
	im := bigImage(b, 500)
	var size int64
	for _, l := range im.Layers {
		size += diskUsage(b, l.Dir)
	}
	once := func(cfg Config) time.Duration {
		start := time.Now()
		sb, err := Start(cfg, Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		exit, err := sb.Wait()
		d := time.Since(start)
		if err != nil || exit.ExitCode != 0 {
			b.Fatalf("exit %+v, %v", exit, err)
		}
		if n, err := sb.Destroy(); n != 0 || err != nil {
			b.Fatalf("Destroy = %d, %v", n, err)
		}
		return d
	}
	var host, img []time.Duration
	for b.Loop() {
		host = append(host, once(Config{Argv: []string{"/usr/bin/true"}}))
		img = append(img, once(Config{Argv: []string{"/usr/bin/true"}, Env: []string{}, Image: im}))
	}
	b.ReportMetric(ms(median(host)), "host-ms")
	b.ReportMetric(ms(median(img)), "image-ms")
	b.ReportMetric(float64(median(img))/float64(median(host)), "image/host")
	b.ReportMetric(float64(size)/(1<<20), "image-MiB")
}

// BenchmarkImageEnvironments: 50 environments on one 500 MiB image, all alive,
// each having written one file to its root: the image is stored once, each
// environment holds only its upper layer (in its state tmpfs).
func BenchmarkImageEnvironments(b *testing.B) {
	im := bigImage(b, 500)
	var size int64
	for _, l := range im.Layers {
		size += diskUsage(b, l.Dir)
	}
	const n = 50
	for b.Loop() {
		var envs []*Sandbox
		var upper int64
		for range n {
			sb, err := Start(Config{Persistent: true, Image: im}, Stdio{})
			if err != nil {
				b.Fatal(err)
			}
			envs = append(envs, sb)
			p, err := sb.Exec(ExecConfig{Argv: []string{"/usr/bin/true"}}, Stdio{})
			if err != nil {
				b.Fatal(err)
			}
			if ex, err := p.Wait(); err != nil || ex.ExitCode != 0 {
				b.Fatal(ex, err)
			}
			p.Kill()
		}
		for _, sb := range envs {
			var st syscall.Statfs_t
			if err := syscall.Statfs(sb.state, &st); err != nil {
				b.Fatal(err)
			}
			upper += int64(st.Blocks-st.Bfree) * st.Bsize
		}
		for _, sb := range envs {
			if k, err := sb.Destroy(); err != nil || k != 0 {
				b.Fatal(k, err)
			}
		}
		b.ReportMetric(float64(size)/(1<<20), "image-MiB")
		b.ReportMetric(float64(upper)/n/(1<<10), "upper-KiB/env")
		b.ReportMetric(float64(size+upper)/(1<<20), "total-MiB")
		b.ReportMetric(float64(n*size)/(1<<20), "copies-MiB")
	}
}
