package attack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/testenv"
)

// guard watches a run for a resource attack that the limits failed to hold: it kills
// every tagged process once more than ceiling exist (so that a broken limit fails the
// test instead of the machine) and forks and execs /bin/true meanwhile, counting the
// forks that fail. How long those take is logged, not asserted: it measures the
// machine's load, which other test suites share.
type guard struct {
	tag     string
	ceiling int
	quit    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	tripped  int
	slowest  time.Duration
	forkErrs int
}

func startGuard(tag string, ceiling int) *guard {
	g := &guard{tag: tag, ceiling: ceiling, quit: make(chan struct{})}
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		for {
			if procs := procsWithTag(g.tag); len(procs) > g.ceiling {
				g.mu.Lock()
				g.tripped = max(g.tripped, len(procs))
				g.mu.Unlock()
				for _, p := range procs {
					syscall.Kill(p.pid, syscall.SIGKILL)
				}
			}
			select {
			case <-g.quit:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer g.wg.Done()
		for {
			start := time.Now()
			cmd := exec.Command("/bin/true")
			err := cmd.Start()
			if err == nil {
				cmd.Wait()
			}
			g.mu.Lock()
			g.slowest = max(g.slowest, time.Since(start))
			if err != nil {
				g.forkErrs++
			}
			g.mu.Unlock()
			select {
			case <-g.quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return g
}

func (g *guard) stop() { close(g.quit); g.wg.Wait() }

// TestAbuse_ForkBomb (ANCHORS vector 18): the classic bash fork bomb under --pids 64
// (bash retries a failed fork, so the bomb keeps pressing against the limit; dash gives
// up at the first failure).
// The limit must hold (never more than 64 of its processes on the host), the host must
// keep forking, and everything must be gone afterwards. Stopped by the pids cgroup and
// the wall-clock timeout with a cgroup-wide kill (the bomb's own `sleep 30` would end
// the run without a limit). Not parallel: the host's forks would compete with other
// tests' processes as well as the bomb.
func TestAbuse_ForkBomb(t *testing.T) {
	requireSandbox(t)
	_, err := os.Stat("/bin/bash")
	testenv.Require(t, err == nil, "/bin/bash for the fork bomb")
	fx := newFixture(t)
	const pids = 64
	g := startGuard(fx.tag, 4*pids)
	r := fx.run(boxOpts{
		flags: []string{"--pids", strconv.Itoa(pids), "--timeout", "4s", "--memory", "512M", "--kill-grace", "200ms"},
		cmd:   []string{"/bin/bash", "-c", ":(){ :|:& };:; sleep 30", fx.tag},
	})
	g.stop()
	if g.tripped > 0 {
		t.Errorf("ESCAPE the pids limit did not hold: %d processes of the bomb on the host (guard killed them)", g.tripped)
	}
	if r.watch.maxLive > pids+2 {
		t.Errorf("the host saw up to %d processes of the bomb with --pids %d", r.watch.maxLive, pids)
	}
	if r.watch.maxLive < pids/2 {
		t.Errorf("the bomb never got going (max %d processes seen): the test proves nothing", r.watch.maxLive)
	}
	if g.forkErrs > 0 {
		t.Errorf("the host could not fork during the bomb: %d failures", g.forkErrs)
	}
	if r.res.Limit != "pids" && r.res.Limit != "timeout" {
		t.Errorf("limit = %q, want pids or timeout", r.res.Limit)
	}
	t.Logf("bomb: max %d processes seen, slowest host fork+exec %v", r.watch.maxLive, g.slowest)
	fx.verifyHost(r)
}

// TestAbuse_MemoryBalloon: a process that touches memory until something stops it,
// under --memory 64M. It must be OOM-killed inside its cgroup (oom_killed, limit
// memory), with a peak near the limit, and the host unaffected.
func TestAbuse_MemoryBalloon(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	r := fx.run(boxOpts{flags: []string{"--memory", "64M"}, cmd: fx.attack("balloon", "1024")})
	if at, ok := r.at.byName["balloon"]; ok && at.ok {
		t.Errorf("ESCAPE the memory limit did not hold: %s", at.detail)
	}
	if !r.res.OOMKilled || r.res.Limit != "memory" {
		t.Errorf("oom_killed %v, limit %q; want true, memory", r.res.OOMKilled, r.res.Limit)
	}
	if r.res.MemoryPeak > 80<<20 {
		t.Errorf("memory_peak_bytes %d is far above --memory 64M", r.res.MemoryPeak)
	}
	fx.verifyHost(r)
}

// TestAbuse_TmpfsFill: filling /tmp and /dev/shm must end in ENOSPC at their size, in
// memory the run is charged for (so not on the host's disk). Not parallel: each run
// holds up to 1.5 GiB of memory.
func TestAbuse_TmpfsFill(t *testing.T) {
	for _, c := range []struct {
		dir   string
		sizeM int
	}{{"/tmp", sandbox.DefaultTmpSize >> 20}, {"/dev/shm", sandbox.DefaultShmSize >> 20}} {
		dir, sizeM := c.dir, c.sizeM
		t.Run(strings.ReplaceAll(strings.Trim(dir, "/"), "/", "-"), func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			r := fx.run(boxOpts{flags: []string{"--memory", "2G"}, cmd: fx.attack("fill", dir, "1536")})
			r.at.mustBeDone(t, "fill")
			r.at.mustFailWith(t, "fill "+dir, []string{"ENOSPC"}, "fill")
			mustFillInMemory(t, r, dir, sizeM)
			fx.verifyHost(r)
		})
	}
}

// TestAbuse_WorkspaceFill: the overlay's upper layer would live on the host's disk;
// writing into /workspace without bound fills it, the same denial of service as a
// tmpfs fill. agentbox puts the upper layer on a tmpfs of --workspace-size (default
// 1G) that it mounts on the host: the writes must stop with ENOSPC at that size, the
// upper layer the host saw must be that tmpfs, the data must be in memory the run is
// charged for, and the upper layer and its mount must be gone afterwards (hostDiffs).
// Not parallel: each run holds up to 1 GiB of memory.
func TestAbuse_WorkspaceFill(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  []string
		limitM int
	}{
		{"default", []string{"--memory", "2G"}, 1024},
		{"workspace-size", []string{"--memory", "2G", "--workspace-size", "64M"}, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			r := fx.run(boxOpts{flags: c.flags, cmd: fx.attack("fill", "/workspace", "1536")})
			r.at.mustBeDone(t, "fill")
			r.at.mustFailWith(t, "fill the workspace past its size", []string{"ENOSPC"}, "fill")
			mustFillInMemory(t, r, "/workspace", c.limitM)
			// The 1 GiB fill lasts seconds, so the watcher must have seen it (a
			// 64 MiB one may be over between two polls on a loaded machine).
			if c.limitM >= 1024 && len(r.watch.stateDirs()) == 0 {
				t.Errorf("the host never saw the run's upper layer in %s: the checks below prove nothing", stateRoot)
			}
			for _, d := range r.watch.stateDirs() {
				fs, ok := r.watch.stateFilesystem(d)
				switch {
				case !ok:
					t.Errorf("the upper layer %s vanished before the host could statfs it", d)
				case fs.Type != unix.TMPFS_MAGIC:
					t.Errorf("HOST CHANGED: the upper layer %s is on the host's filesystem (type %#x), not a tmpfs of its own", d, fs.Type)
				case int64(fs.Blocks)*fs.Bsize != int64(c.limitM)<<20:
					t.Errorf("the upper layer's tmpfs holds %d bytes, want --workspace-size %d MiB", int64(fs.Blocks)*fs.Bsize, c.limitM)
				}
			}
			fx.verifyHost(r)
		})
	}
}

// mustFillInMemory checks what a fill of dir wrote: most of its sizeM MiB, no more,
// and all of it in pages charged to the run's memory cgroup. A tmpfs's pages cannot
// be written back (swap is off), so a peak below what was written means the data went
// to a disk: the host's. This reads only the run's own figures, so other suites
// writing to the host's disk at the same time cannot change the verdict.
func mustFillInMemory(t *testing.T, r *boxRun, dir string, sizeM int) {
	t.Helper()
	at, ok := r.at.get(t, "fill-mb")
	if !ok {
		return
	}
	n, err := strconv.Atoi(at.detail)
	if err != nil || n > sizeM || n < sizeM/2 {
		t.Errorf("the sandbox wrote %s MiB into %s, want at most %d (and most of it)", at.detail, dir, sizeM)
		return
	}
	if r.res.MemoryPeak < int64(n)<<20 {
		t.Errorf("HOST CHANGED: %d MiB written to %s, yet the run's memory peaked at %d MiB: the data is not in its tmpfs", n, dir, r.res.MemoryPeak>>20)
	}
}

// TestAbuse_FdExhaustion: --open-files 64 must stop the command at 64 descriptors.
func TestAbuse_FdExhaustion(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	r := fx.run(boxOpts{flags: []string{"--open-files", "64"}, cmd: fx.attack("fd-exhaust", "100000")})
	r.at.mustBeDone(t, "fd-exhaust")
	r.at.mustFailWith(t, "open descriptors past --open-files", []string{"EMFILE"}, "fd-exhaust")
	if at, ok := r.at.get(t, "fd-count"); ok {
		if n, _ := strconv.Atoi(at.detail); n > 64 {
			t.Errorf("opened %d descriptors with --open-files 64", n)
		}
	}
	fx.verifyHost(r)
}

// TestAbuse_StdoutFlood: `yes` writes as fast as it can. The capture must stay within
// --output-limit, the hard --output-total must end the run with limit output and cap
// the --stdout-file copy at exactly that total, and agentbox's own memory must stay
// small either way. (stdout_bytes counts what was drained while the kill landed, so it
// may pass the total; it is logged, not asserted.)
func TestAbuse_StdoutFlood(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		flags     []string
		wantLimit string
	}{
		{"hard-total", []string{"--output-limit", "64K", "--output-total", "1M", "--timeout", attackTimeout}, "output"},
		{"capped-until-timeout", []string{"--output-limit", "64K", "--output-total", "1T", "--timeout", "2s"}, "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			requireSandbox(t)
			fx := newFixture(t)
			outFile := filepath.Join(fx.dir, "stdout.copy")
			flags := c.flags
			if c.wantLimit == "output" {
				flags = append(flags, "--stdout-file", outFile)
			}
			r := fx.run(boxOpts{flags: flags, cmd: []string{"/usr/bin/yes", fx.tag}})
			if r.res.Limit != c.wantLimit {
				t.Errorf("limit = %q, want %q", r.res.Limit, c.wantLimit)
			}
			if !r.res.StdoutTruncated {
				t.Errorf("stdout_truncated is false after a flood")
			}
			if n := len(r.res.Stdout); n > 64<<10+1024 {
				t.Errorf("captured stdout is %d bytes with --output-limit 64K", n)
			}
			if c.wantLimit == "output" {
				if r.res.StdoutBytes < 1<<20 {
					t.Errorf("stdout_bytes = %d: the run ended before the 1M total", r.res.StdoutBytes)
				}
				fi, err := os.Stat(outFile)
				if err != nil || fi.Size() > 1<<20 {
					t.Errorf("--stdout-file holds more than --output-total 1M (%v, %v)", fi, err)
				}
			}
			if rss := r.maxRSS; rss > 200<<20 {
				t.Errorf("agentbox itself grew to %d MiB during the flood", rss>>20)
			}
			t.Logf("stdout_bytes %d, agentbox max RSS %d MiB, %v", r.res.StdoutBytes, r.maxRSS>>20, r.duration)
			fx.verifyHost(r)
		})
	}
}

// TestAbuse_CPUSpin: spinning threads under --cpu-time 1s end with limit cpu after
// about one CPU-second, not with the wall timeout (however slow a loaded machine
// makes that CPU-second).
func TestAbuse_CPUSpin(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	r := fx.run(boxOpts{flags: []string{"--cpu-time", "1s", "--timeout", attackTimeout}, cmd: fx.attack("spin", "2")})
	if r.res.Limit != "cpu" {
		t.Errorf("limit = %q, want cpu", r.res.Limit)
	}
	if cpu := r.res.CPUUserMS + r.res.CPUSysMS; cpu < 900 || cpu > 5000 {
		t.Errorf("cpu_user_ms+cpu_sys_ms = %v, want about 1000", cpu)
	}
	fx.verifyHost(r)
}

// TestAbuse_FileSize: --file-size 1M stops one big file at 1 MiB (EFBIG).
func TestAbuse_FileSize(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	r := fx.run(boxOpts{flags: []string{"--file-size", "1M"}, cmd: fx.attack("bigfile", "/tmp/big", "8")})
	r.at.mustBeDone(t, "bigfile")
	r.at.mustFailWith(t, "write past --file-size", []string{"EFBIG"}, "bigfile")
	fx.verifyHost(r)
}

// TestAbuse_DefaultLimits (issue 10, item 4): a plain `agentbox run`, with no limit
// flag at all, must bound a fork bomb and a memory balloon (before, one forked 2,000
// processes and reached 1.9 GB). The defaults: 1024 tasks (pids cgroup) and half of
// the host's memory, at most 4 GiB (memory cgroup, swap off). Not parallel: the bomb
// measures the host's responsiveness and the balloon takes gigabytes.
func TestAbuse_DefaultLimits(t *testing.T) {
	t.Run("fork-bomb", func(t *testing.T) {
		// Processes that keep their count: one fork+exec of /bin/sleep after the
		// other (a bash bomb's growth depends on the CPU it gets, which a loaded
		// host does not give), each one task of the pids cgroup.
		requireSandbox(t)
		fx := newFixture(t)
		const pids = 1024
		var hostMax int
		r := fx.run(boxOpts{flags: []string{"--timeout", "60s"}, cmd: fx.attack("spawn", "2000", "3000"), during: func() {
			// The sandbox's processes as the host sees them: every process of its
			// host uid, counted until the attacker is gone.
			var uid int
			for _, p := range procsWithTag(fx.tag) {
				uid = p.uid
			}
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && len(procsWithTag(fx.tag)) > 0; time.Sleep(50 * time.Millisecond) {
				n := 0
				for _, p := range listProcs() {
					if p.uid == uid && p.state != "Z" {
						n++
					}
				}
				hostMax = max(hostMax, n)
			}
		}})
		r.at.mustBeDone(t, "spawn")
		r.at.mustFailWith(t, "fork past the default pids limit", []string{"EAGAIN"}, "spawn")
		if at, ok := r.at.get(t, "spawned"); ok {
			// The init's and the attacker's threads count too.
			if n, err := strconv.Atoi(at.detail); err != nil || n > pids || n < pids-64 {
				t.Errorf("started %s processes under the default limit of %d tasks", at.detail, pids)
			}
		}
		if hostMax > pids {
			t.Errorf("ESCAPE the host saw %d processes of the sandbox's uid with the default of %d", hostMax, pids)
		}
		if hostMax < pids/2 {
			t.Errorf("the host saw at most %d processes of the sandbox: the count proves nothing", hostMax)
		}
		t.Logf("spawn: at most %d processes of the sandbox's uid on the host", hostMax)
		fx.verifyHost(r)
	})
	t.Run("balloon", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		bound := min(4<<30, hostMemory(t)/2)
		// Touching gigabytes takes seconds (16 s for 4 GiB on a loaded 2-CPU VM, more
		// on a busier one): the limit is also read from the host while the balloon
		// grows, so the test does not depend on how far it gets in its time.
		var limit string
		r := fx.run(boxOpts{flags: []string{"--timeout", "80s"}, cmd: fx.attack("balloon", strconv.FormatInt(bound>>20+1024, 10)),
			during: func() {
				for _, p := range procsWithTag(fx.tag) {
					limit = memoryLimit(p.pid)
				}
			}})
		if at, ok := r.at.byName["balloon"]; ok && at.ok {
			t.Errorf("ESCAPE no default memory limit: %s", at.detail)
		}
		if want := strconv.FormatInt(bound, 10); limit != want {
			t.Errorf("ESCAPE the run's memory cgroup limit is %q, want the default %s", limit, want)
		}
		if r.res.MemoryPeak > bound+64<<20 {
			t.Errorf("memory_peak_bytes %d is above the default of %d", r.res.MemoryPeak, bound)
		}
		if r.res.OOMKilled != (r.res.Limit == "memory") && r.res.Limit != "timeout" {
			t.Errorf("oom_killed %v, limit %q: a balloon stopped by the limit is reported as such", r.res.OOMKilled, r.res.Limit)
		}
		t.Logf("balloon: limit %s, peak %d MiB, oom_killed %v, limit %q", limit, r.res.MemoryPeak>>20, r.res.OOMKilled, r.res.Limit)
		fx.verifyHost(r)
	})
}

// memoryLimit reads the memory limit of pid's cgroup from the host ("max" for none).
func memoryLimit(pid int) string {
	for ctrl, path := range cgroupLines(pid) {
		file := "memory.max"
		if ctrl == "memory" {
			file = "memory.limit_in_bytes"
		} else if ctrl != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(cgroupDir(ctrl, path), file))
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && n >= 1<<62 {
			v = "max" // cgroup v1's "no limit"
		}
		return v
	}
	return ""
}

// hostMemory is MemTotal from /proc/meminfo, in bytes.
func hostMemory(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}
