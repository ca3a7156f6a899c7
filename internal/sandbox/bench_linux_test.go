package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestTimings: Exit.Timings names every phase from Start to Wait, and together they
// account for the whole time.
func TestTimings(t *testing.T) {
	start := time.Now()
	r := runIn(t, Config{Argv: []string{"/bin/true"}, Workspace: t.TempDir()})
	total := time.Since(start)
	var names []string
	var sum time.Duration
	for _, p := range r.exit.Timings {
		names = append(names, p.Name)
		sum += p.Dur
	}
	for _, want := range []string{"prepare", "clone", "init-start", "cgroup", "send-config", "config",
		"mount-system", "mount-proc-dev-tmp", "mount-workspace", "pivot", "net", "caps", "landlock",
		"seccomp", "exec", "reaped", "report", "wait"} {
		if !slices.Contains(names, want) {
			t.Errorf("no phase %q in %q", want, names)
		}
	}
	if names[len(names)-1] != "wait" || sum <= 0 || sum > total {
		t.Errorf("phases %q sum to %v, Start to Destroy took %v", names, sum, total)
	}
}

// benchRun measures Start to Wait of cfg b.N times and reports the median and the
// median of each phase (go test -bench . -benchtime 20x prints them), and the
// median of Destroy after Wait (destroy-ms), which the caller waits for too.
func benchRun(b *testing.B, cfg Config) {
	testenv.RequireRoot(b)
	var totals, destroys []time.Duration
	phases := map[string][]time.Duration{}
	var order []string
	for b.Loop() {
		start := time.Now()
		sb, err := Start(cfg, Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		exit, err := sb.Wait()
		totals = append(totals, time.Since(start))
		b.StopTimer()
		if err != nil || exit.ExitCode != 0 {
			b.Fatalf("exit %+v, %v", exit, err)
		}
		t := time.Now()
		if n, err := sb.Destroy(); n != 0 || err != nil {
			b.Fatalf("Destroy = %d, %v", n, err)
		}
		destroys = append(destroys, time.Since(t))
		for _, p := range exit.Timings {
			if _, ok := phases[p.Name]; !ok {
				order = append(order, p.Name)
			}
			phases[p.Name] = append(phases[p.Name], p.Dur)
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(median(totals)), "median-ms")
	for _, name := range order {
		b.ReportMetric(ms(median(phases[name])), name+"-ms")
	}
	b.ReportMetric(ms(median(destroys)), "destroy-ms")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkTrue: /bin/true in a sandbox without a workspace.
func BenchmarkTrue(b *testing.B) {
	benchRun(b, Config{Argv: []string{"/bin/true"}})
}

// BenchmarkTrueOverlay: /bin/true with an overlay workspace (idmapped lower layer).
func BenchmarkTrueOverlay(b *testing.B) {
	ws, err := os.MkdirTemp("", "agentbox-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(ws)
	benchRun(b, Config{Argv: []string{"/bin/true"}, Workspace: ws})
}

// BenchmarkTrueOverlayInit is BenchmarkTrueOverlay with cmd/agentbox-init as the
// init, as installed, instead of the test binary re-executed.
func BenchmarkTrueOverlayInit(b *testing.B) {
	useInit(b, buildInit(b))
	BenchmarkTrueOverlay(b)
}

// BenchmarkForkExec is the floor: /bin/true started and waited for directly.
func BenchmarkForkExec(b *testing.B) {
	var totals []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		totals = append(totals, time.Since(start))
	}
	b.ReportMetric(ms(median(totals)), "median-ms")
}

// BenchmarkPersistentExec is Exec, Wait and Kill of /bin/true in a persistent
// sandbox, with /dev/null as its stdio.
func BenchmarkPersistentExec(b *testing.B) {
	testenv.RequireRoot(b)
	sb, err := Start(Config{Persistent: true}, Stdio{})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Destroy()
	for b.Loop() {
		p, err := sb.Exec(ExecConfig{Argv: []string{"/bin/true"}}, Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		if ex, err := p.Wait(); err != nil || ex.ExitCode != 0 {
			b.Fatal(ex, err)
		}
		if _, err := p.Kill(); err != nil {
			b.Fatal(err)
		}
	}
}
