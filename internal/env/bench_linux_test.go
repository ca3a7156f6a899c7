package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// BenchmarkExecInEnvironment is one `true` in an existing environment (Exec, the
// runner's whole contract included).
func BenchmarkExecInEnvironment(b *testing.B) {
	m, id := benchEnv(b)
	for b.Loop() {
		if res, err := m.Exec(context.Background(), alice, id, ExecRequest{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkExecOnTerminal is the same `true` on a terminal of the sandbox's own
// (ExecRequest.TTY): the pty is opened by the init for each command.
func BenchmarkExecOnTerminal(b *testing.B) {
	m, id := benchEnv(b)
	for b.Loop() {
		if res, err := m.Exec(context.Background(), alice, id, ExecRequest{Argv: []string{"true"}, TTY: &runner.TTY{Rows: 24, Cols: 80}}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkFreshSandbox is the same `true` in a sandbox of its own (runner.Run at
// the namespace level), for comparison.
func BenchmarkFreshSandbox(b *testing.B) {
	for b.Loop() {
		if res, err := runner.Run(context.Background(), runner.Spec{Argv: []string{"true"}, Isolation: runner.IsolationNamespace}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkCreateDestroy is an environment's whole life with nothing in it,
// on a memory layer (the default) and on a disk layer (mkfs, loop device).
func BenchmarkCreateDestroy(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchCreateDestroy(b, LayerMemory) })
	b.Run("disk", func(b *testing.B) { benchCreateDestroy(b, LayerDisk) })
}

func benchCreateDestroy(b *testing.B, layer string) {
	m, _ := benchEnv(b)
	for b.Loop() {
		info, err := m.Create(context.Background(), CreateOptions{Owner: alice, Layer: layer})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Destroy(context.Background(), alice, info.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFile is one small file read through the workspace root, as the
// sandbox user.
func BenchmarkReadFile(b *testing.B) {
	m, id := benchEnv(b)
	if err := m.WriteFile(context.Background(), alice, id, "f", []byte("hello\n")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := m.ReadFile(context.Background(), alice, id, "f", 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEnv(b *testing.B) (*Manager, string) {
	m, err := NewManager(Config{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	info, err := m.Create(context.Background(), CreateOptions{Owner: alice})
	if err != nil {
		b.Fatal(err)
	}
	return m, info.ID
}

// BenchmarkPauseResume is one Pause and one Resume of an environment with a
// command running in it (a sleeping shell: the freezer must catch every task).
func BenchmarkPauseResume(b *testing.B) {
	m, id := benchEnv(b)
	ctx := context.Background()
	if _, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "while :; do sleep 1; done"}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := m.Pause(ctx, alice, id, PauseOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Resume(ctx, alice, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPauseToDisk is one pause to disk of an environment on a disk
// layer whose command wrote 64 MiB to its workspace (rewritten, untimed, before
// each: dirty pages in RAM) and holds the file open. It reports the charge of
// the environment's cgroup before and after the pause, what the host's MemFree
// gained (noisy on a shared host; MemAvailable would not move, since it counts
// page cache as available), the time of Resume, and the
// time of a read of the 64 MiB after it (from disk, against the page cache).
func BenchmarkPauseToDisk(b *testing.B) {
	m, err := NewManager(Config{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	ctx := context.Background()
	info, err := m.Create(ctx, CreateOptions{Owner: alice, Layer: LayerDisk, Limits: Limits{WorkspaceSize: 512 << 20, Memory: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	id := info.ID
	if _, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "exec 3< /dev/null; while :; do sleep 1; done"}}); err != nil {
		b.Fatal(err)
	}
	sb := m.envs[id].sb.(*sandbox.Sandbox)
	exec := func(script string) time.Duration {
		t0 := time.Now()
		if res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", script}}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		return time.Since(t0)
	}
	var before, after, released, resume, cold, warm float64
	for b.Loop() {
		b.StopTimer()
		exec("head -c 67108864 /dev/urandom > big")
		warm += exec("cat big > /dev/null").Seconds()
		c0, _ := sb.MemoryUsage()
		h0 := memFree(b)
		b.StartTimer()
		if _, err := m.Pause(ctx, alice, id, PauseOptions{ToDisk: true}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c1, _ := sb.MemoryUsage()
		h1 := memFree(b)
		t0 := time.Now()
		if _, err := m.Resume(ctx, alice, id); err != nil {
			b.Fatal(err)
		}
		resume += time.Since(t0).Seconds()
		cold += exec("cat big > /dev/null").Seconds()
		before, after, released = before+float64(c0), after+float64(c1), released+float64(h1-h0)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(before/n/(1<<20), "MiB-charged-before")
	b.ReportMetric(after/n/(1<<20), "MiB-charged-after")
	b.ReportMetric(released/n/(1<<20), "MiB-host-freed")
	b.ReportMetric(resume/n*1e3, "ms-resume")
	b.ReportMetric(cold/n*1e3, "ms-read-64MiB-after")
	b.ReportMetric(warm/n*1e3, "ms-read-64MiB-cached")
}

// memFree is the host's MemFree, in bytes.
func memFree(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemFree:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no MemFree in /proc/meminfo")
	return 0
}

// BenchmarkSnapshot is one Snapshot of an environment whose workspace
// holds what the sub-benchmark writes (1 file; 5,000 files and 32 MiB): the
// seal (kill, clone of the upper layer, destroy) and the new sandbox the
// environment continues in, which should not grow with what was written.
// Each iteration writes into a fresh environment, neither timed.
func BenchmarkSnapshot(b *testing.B) {
	for _, bc := range []struct{ name, script string }{
		{"1file", "echo x > f"},
		{"5000files+32MiB", "mkdir d && cd d && seq 5000 | xargs touch && head -c 33554432 /dev/zero > ../big"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, _ := benchEnv(b)
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				info, err := m.Create(ctx, CreateOptions{Owner: alice})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := m.Exec(ctx, alice, info.ID, ExecRequest{Argv: []string{"sh", "-c", bc.script}}); err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
				b.StartTimer()
				if _, err := m.Snapshot(ctx, alice, info.ID); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				m.Destroy(ctx, alice, info.ID)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkFork is one Fork of 10 or 100 environments from an existing
// snapshot (ns/op / n is one fork), their destruction not timed.
func BenchmarkFork(b *testing.B) {
	for _, n := range []int{10, MaxFork} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m, id := benchEnv(b)
			ctx := context.Background()
			s, err := m.Snapshot(ctx, alice, id)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: n, Snapshot: s.ID})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, f := range forks {
					m.Destroy(ctx, alice, f.ID)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkLevel puts the isolation levels of an environment side by side in one
// run, operation by operation: create to the end of its first command (`true`)
// and destroy; one `true` in a live environment; a real test run (python3's
// unittest over a small package, ten tests).
func BenchmarkLevel(b *testing.B) {
	b.Setenv("TMPDIR", b.TempDir()) // the gvisor level's state
	ws := b.TempDir()
	os.WriteFile(filepath.Join(ws, "calc.py"), []byte("def add(a, b):\n    return a + b\n"), 0o644)
	var tests strings.Builder
	tests.WriteString("import unittest\nimport calc\n\nclass T(unittest.TestCase):\n")
	for i := range 10 {
		fmt.Fprintf(&tests, "    def test_%d(self):\n        self.assertEqual(calc.add(%d, 1), %d)\n", i, i, i+1)
	}
	os.WriteFile(filepath.Join(ws, "test_calc.py"), []byte(tests.String()), 0o644)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 1000, 1000) })
	m, err := NewManager(Config{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	ctx := context.Background()
	exec := func(b *testing.B, id string, argv ...string) {
		if res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: argv}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
	live := map[runner.Isolation]string{}
	for _, level := range levels {
		info, err := m.Create(ctx, CreateOptions{Owner: alice, Workspace: ws, Isolation: level})
		if err != nil {
			b.Fatal(err)
		}
		live[level] = info.ID
	}
	for _, op := range []string{"create", "exec", "unittest"} {
		for _, level := range levels {
			b.Run(op+"/"+string(level), func(b *testing.B) {
				for b.Loop() {
					switch op {
					case "create":
						info, err := m.Create(ctx, CreateOptions{Owner: alice, Workspace: ws, Isolation: level})
						if err != nil {
							b.Fatal(err)
						}
						exec(b, info.ID, "true")
						if err := m.Destroy(ctx, alice, info.ID); err != nil {
							b.Fatal(err)
						}
					case "exec":
						exec(b, live[level], "true")
					case "unittest":
						exec(b, live[level], "python3", "-B", "-m", "unittest", "-q")
					}
				}
			})
		}
	}
}
