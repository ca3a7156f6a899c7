package attack

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEscape_ProcHostPidsInvisible (ANCHORS vector 6): /proc must show only the
// sandbox's processes; otherwise the agent can read host command lines and
// environments (secrets in argv and env are common) and target host pids. pid 1 must
// be agentbox's init, and its environment (agentbox's own, full of secrets) must not be
// readable. Stopped by the pid namespace and a fresh procfs, and by running the init as
// another user than the command.
func TestEscape_ProcHostPidsInvisible(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		v := fx.startVictim(0)
		at := fx.direct(0, nil, "proc-scan", reverse(v.token), reverse(fx.secret))
		at.mustSucceed(t, "control: a host process is visible without a sandbox", "token")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		v := fx.startVictim(0)
		r := fx.run(boxOpts{cmd: fx.attack("proc-scan", reverse(v.token), reverse(fx.secret))})
		r.at.mustBeDone(t, "proc-scan")
		r.at.mustFail(t, "a host process is visible in the sandbox's /proc", "token")
		r.at.mustFail(t, "agentbox's secret environment is readable through /proc", "secret")
		if at, ok := r.at.get(t, "pids"); ok {
			pids := strings.Fields(at.detail)
			if len(pids) > 8 {
				t.Errorf("the sandbox sees %d processes (%s); only its own handful should exist", len(pids), at.detail)
			}
			host1, _ := os.ReadFile("/proc/1/comm")
			if h := strings.TrimSpace(string(host1)); slicesHas(pids, "1:"+h) {
				t.Errorf("pid 1 inside is %q, the host's init", h)
			}
		}
		if at, ok := r.at.get(t, "pid1-environ"); ok && at.ok && at.detail != "" {
			t.Errorf("/proc/1/environ (agentbox's init) is readable and not empty: %.300q", at.detail)
		}
		fx.verifyHost(r)
	})
}

// reverse hides a string from a scan of the argv that carries it: proc-scan gets the
// token and the secret reversed, so that its own command line does not match.
func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func slicesHas(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestEscape_ProcSysWritesAndKernelFiles (ANCHORS vector 6): writing
// /proc/sys/kernel/core_pattern or modprobe makes the host kernel run a program of the
// sandbox's choosing as root (the classic container escape); sysrq-trigger reboots
// the host; /proc/kcore, timer_list and friends leak kernel memory and host activity.
// Stopped by read-only /proc/sys and sysrq-trigger binds, masks over the kernel files,
// and the unprivileged sandbox user.
func TestEscape_ProcSysWritesAndKernelFiles(t *testing.T) {
	t.Parallel()
	writes := []string{
		"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
		"/proc/sysrq-trigger", "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward",
		"/proc/sys/fs/binfmt_misc/register", "/proc/sys/kernel/randomize_va_space",
		"/sys/kernel/uevent_helper", "/proc/1/attr/current",
		"/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
	}
	masked := []string{"/proc/kcore", "/proc/kmsg", "/proc/timer_list", "/proc/keys", "/proc/sched_debug", "/proc/latency_stats", "/proc/kpageflags"}
	maskedDirs := []string{"/proc/acpi", "/proc/scsi", "/sys/firmware"}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		// Without a sandbox the files are there and readable (by root here; some
		// kernels make timer_list world-readable): the leak is real.
		at := fx.direct(0, nil, "fsops", "readn:/proc/timer_list", "openw:/proc/sys/vm/drop_caches")
		if a := at.byName["0:readn:/proc/timer_list"]; !a.ok || a.detail == "0 bytes" {
			t.Errorf("control: /proc/timer_list should be readable on the host: %v", a)
		}
		at.mustSucceed(t, "control: root on the host may open a sysctl for writing", "1:openw:/proc/sys/vm/drop_caches")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		fx.protect("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe")
		var ops []string
		for _, p := range writes {
			ops = append(ops, "openw:"+p)
		}
		for _, p := range masked {
			ops = append(ops, "readn:"+p)
		}
		for _, p := range maskedDirs {
			ops = append(ops, "ls:"+p)
		}
		r := fx.run(boxOpts{cmd: fx.attack("fsops", ops...)})
		r.at.mustBeDone(t, "fsops")
		for i, p := range writes {
			r.at.mustFail(t, "write to a kernel setting", fmt.Sprintf("%d:openw:%s", i, p))
		}
		for i, p := range masked {
			name := fmt.Sprintf("%d:readn:%s", len(writes)+i, p)
			if at, ok := r.at.get(t, name); ok && at.ok && at.detail != "0 bytes" {
				t.Errorf("ESCAPE kernel information: %s is readable: %s", p, at.detail)
			}
		}
		for i, p := range maskedDirs {
			name := fmt.Sprintf("%d:ls:%s", len(writes)+len(masked)+i, p)
			if at, ok := r.at.get(t, name); ok && at.ok && strings.Trim(at.detail, ". ") != "" {
				t.Errorf("ESCAPE kernel information: %s lists %q", p, at.detail)
			}
		}
		fx.verifyHost(r)
	})
}

// TestEscape_ProcSelfExeOverwrite_CVE_2019_5736: runc's init was the host runc binary;
// a container process opened /proc/<init>/exe with O_PATH and, once runc exited,
// re-opened it for writing and replaced the host's runc. agentbox's init is the host
// agentbox binary re-executed: opening it (or any visible process's exe) for write,
// directly or through an O_PATH descriptor, must fail, and the binary must be
// unchanged. Stopped by the init running as a user the command cannot ptrace, the
// read-only mounts, and no_new_privs/dumpability.
func TestEscape_ProcSelfExeOverwrite_CVE_2019_5736(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		// A host "runtime" binary that exits while the attacker holds its O_PATH fd.
		rt := fx.dir + "/runtime"
		copyFile(t, tools.attacker, rt, 0o755)
		cmd := startHelper(t, rt, "victim", "x")
		killed := make(chan struct{})
		go func() {
			// Once the attacker holds its O_PATH descriptor of the runtime's exe
			// (or after 20 s), the runtime exits.
			defer close(killed)
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !holdsFile(fx.tag, rt); {
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Kill()
		}()
		defer func() { <-killed }()
		at := fx.direct(0, nil, "exe-overwrite", "20000", strconv.Itoa(cmd.Process.Pid))
		at.mustSucceed(t, "control: re-opening a runtime's exe for write once it exited", "reopen-wr:"+strconv.Itoa(cmd.Process.Pid))
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		fx.protect(tools.agentbox, tools.attacker)
		before := fileSum(t, tools.agentbox)
		r := fx.run(boxOpts{cmd: fx.attack("exe-overwrite", "1000")})
		r.at.mustBeDone(t, "exe-overwrite")
		r.at.mustFail(t, "open a runtime or sandbox binary for write", r.at.withPrefix("open-wr:")...)
		r.at.mustFail(t, "re-open an exe descriptor for write", r.at.withPrefix("reopen-wr:")...)
		if len(r.at.withPrefix("open-wr:1")) == 0 {
			t.Errorf("the attacker did not try pid 1")
		}
		if after := fileSum(t, tools.agentbox); after != before {
			t.Errorf("HOST CHANGED: the agentbox binary changed")
		}
		fx.verifyHost(r)
	})
}

func fileSum(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// TestEscape_RuntimeBinaryAndConfigTampering (ANCHORS vector 24): the runtime's own
// binary and its configuration must be out of reach: the host path of agentbox does
// not exist inside, /proc/1/exe cannot be written, and the init's command line and
// environment (where a careless runtime would put its config) carry no secret.
func TestEscape_RuntimeBinaryAndConfigTampering(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	fx.protect(tools.agentbox)
	r := fx.run(boxOpts{cmd: fx.attack("fsops",
		"stat:"+tools.agentbox,
		"openw:"+tools.agentbox,
		"ls:"+tools.dir,
		"openw:/proc/1/exe",
		"openw:/proc/self/exe",
		"read:/proc/1/cmdline",
		"read:/proc/1/environ",
		"readlink:/proc/1/exe",
		"write:/workspace/attacker:PWNED",
		"ls:/proc/1/fd",
		"openw:/proc/1/fd/0",
		"openw:/proc/1/fd/3",
		"ls:/sys/fs/cgroup",
	)})
	r.at.mustBeDone(t, "fsops")
	r.at.mustFail(t, "reach the agentbox binary", "0:stat:"+tools.agentbox, "1:openw:"+tools.agentbox, "2:ls:"+tools.dir, "3:openw:/proc/1/exe", "4:openw:/proc/self/exe")
	// The init's descriptors include its pipes to the host (config in, status out):
	// writing the status pipe would forge the result.
	r.at.mustFail(t, "reach the init's descriptors", "9:ls:/proc/1/fd", "10:openw:/proc/1/fd/0", "11:openw:/proc/1/fd/3")
	// The cgroup tree would let the command move itself out of its limits.
	if at := r.at.byName["12:ls:/sys/fs/cgroup"]; at.ok && strings.TrimSpace(at.detail) != "" {
		t.Errorf("the host's cgroup tree is visible in the sandbox: %s", at.detail)
	}
	for _, n := range []string{"5:read:/proc/1/cmdline", "6:read:/proc/1/environ"} {
		if at := r.at.byName[n]; at.ok && strings.Contains(at.detail, fx.ws) {
			t.Errorf("%s shows a host path (%s): %.200q", n, fx.ws, at.detail)
		}
	}
	fx.verifyHost(r) // includes: the host copy of the attacker in the workspace is unchanged
}

// TestDefaultIsolationIsNamespace: `agentbox run` without --isolation must sandbox
// (the contract's default); every other test passes --isolation namespace explicitly
// so that a changed default can never run an attack unconfined.
func TestDefaultIsolationIsNamespace(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	out, err := exec.Command(tools.agentbox, "run", "--json", "--", "/bin/true").Output()
	var r Result
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("agentbox run --json -- /bin/true: %v, %v: %q", err, jerr, out)
	}
	if r.Isolation != "namespace" {
		t.Errorf("default isolation is %q, want namespace", r.Isolation)
	}
}

// holdsFile reports whether a process with tag in its argv has a descriptor of path.
func holdsFile(tag, path string) bool {
	for _, p := range procsWithTag(tag) {
		dir := "/proc/" + strconv.Itoa(p.pid) + "/fd"
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == path {
				return true
			}
		}
	}
	return false
}

// hostInfoFiles are /proc files that tell about the host rather than the sandbox:
// its kernel command line and configuration, boot id, uptime, CPU, interrupt,
// disk, swap, memory-zone and pressure counters, keyring users, symbols, modules
// and hardware maps.
var hostInfoFiles = []string{"/proc/cmdline", "/proc/sys/kernel/random/boot_id", "/proc/uptime", "/proc/stat",
	"/proc/config.gz", "/proc/diskstats", "/proc/partitions", "/proc/swaps", "/proc/interrupts", "/proc/softirqs",
	"/proc/schedstat", "/proc/zoneinfo", "/proc/buddyinfo", "/proc/key-users", "/proc/kallsyms", "/proc/modules",
	"/proc/iomem", "/proc/ioports", "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io",
	"/proc/irq/default_smp_affinity"}

// hostFacts are what the host knows of itself, read by the test.
type hostFacts struct {
	cmdline, bootID string
	btime           int64
	uptime          float64
}

func readHostFacts(t *testing.T) hostFacts {
	t.Helper()
	var h hostFacts
	b, _ := os.ReadFile("/proc/cmdline")
	h.cmdline = strings.TrimSpace(string(b))
	b, _ = os.ReadFile("/proc/sys/kernel/random/boot_id")
	h.bootID = strings.TrimSpace(string(b))
	b, _ = os.ReadFile("/proc/uptime")
	fmt.Sscan(string(b), &h.uptime)
	b, _ = os.ReadFile("/proc/stat")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			h.btime, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if h.cmdline == "" || h.bootID == "" || h.btime == 0 {
		t.Fatalf("the host's own facts are unreadable: %+v", h)
	}
	return h
}

// hostLeaks lists what of h the attacker's reads (fsops read:PATH over
// hostInfoFiles, then clocks) gave away, for a process that started at most
// maxUp seconds ago.
func hostLeaks(h hostFacts, files, clk *attempts, maxUp float64) []string {
	var leaks []string
	for i, p := range hostInfoFiles {
		a, ok := files.byName[fmt.Sprintf("%d:read:%s", i, p)]
		if !ok || !a.ok {
			continue // absent or unreadable: nothing told
		}
		content := strings.TrimSpace(a.detail)
		switch p {
		case "/proc/cmdline":
			if content != "" {
				leaks = append(leaks, fmt.Sprintf("%s: %.80q (the host's: %v)", p, content, strings.Contains(content, h.cmdline)))
			}
		case "/proc/sys/kernel/random/boot_id":
			if content == h.bootID {
				leaks = append(leaks, p+": the host's boot id")
			}
		case "/proc/uptime":
			var up float64
			if _, err := fmt.Sscan(content, &up); err != nil || up > maxUp {
				leaks = append(leaks, fmt.Sprintf("%s: up %q, yet the sandbox is at most %.1f s old (the host: %.0f s)", p, content, maxUp, h.uptime))
			}
		case "/proc/stat":
			for line := range strings.Lines(content) {
				f := strings.Fields(line)
				switch {
				case len(f) == 2 && f[0] == "btime":
					if bt, _ := strconv.ParseInt(f[1], 10, 64); bt-h.btime < 5 && h.btime-bt < 5 {
						leaks = append(leaks, fmt.Sprintf("%s: btime %s is the host's boot", p, f[1]))
					}
				case len(f) > 1 && (strings.HasPrefix(f[0], "cpu") || f[0] == "intr" || f[0] == "ctxt" || f[0] == "processes" || f[0] == "softirq"):
					if strings.Trim(strings.Join(f[1:], ""), "0") != "" {
						leaks = append(leaks, fmt.Sprintf("%s: host counters %.80q", p, line))
					}
				}
			}
		default:
			if content != "" {
				leaks = append(leaks, fmt.Sprintf("%s: %.80q", p, content))
			}
		}
	}
	for _, n := range []string{"boottime", "monotonic", "sysinfo-uptime", "self-start"} {
		if a, ok := clk.byName[n]; ok && a.ok {
			limit := maxUp
			if n == "sysinfo-uptime" {
				limit++ // sysinfo(2) rounds the boot clock up to the next second
			}
			if v, _ := strconv.ParseFloat(a.detail, 64); v > limit {
				leaks = append(leaks, fmt.Sprintf("clock %s: %s s, yet the sandbox is at most %.1f s old", n, a.detail, limit))
			}
		}
	}
	return leaks
}

// TestEscape_ProcHostInformation (ANCHORS vector 6; issue 10, item 5): /proc tells
// a lot about the host that is none of the sandbox's business: the kernel command
// line (here: the VM's control ports), its configuration, the boot id, how long the
// host has been up (also through CLOCK_BOOTTIME, CLOCK_MONOTONIC and sysinfo), and
// host-wide counters of CPU time, interrupts, context switches, forks, disks, swap
// and memory pressure. None of it may reach the sandbox. Stopped by masks over the
// files (/dev/null, empty directories), a generated /proc/stat (one zeroed line per
// CPU, the sandbox's btime) and boot id, and a time namespace whose clocks start
// with the sandbox.
func TestEscape_ProcHostInformation(t *testing.T) {
	t.Parallel()
	var reads []string
	for _, p := range hostInfoFiles {
		reads = append(reads, "read:"+p)
	}
	h := readHostFacts(t)
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		leaks := hostLeaks(h, fx.direct(0, nil, append([]string{"fsops"}, reads...)...), fx.direct(0, nil, "clocks"), 5)
		for _, want := range []string{"/proc/cmdline", "boot id", "/proc/uptime", "btime", "host counters", "clock boottime", "clock monotonic", "/proc/interrupts"} {
			if !slices.ContainsFunc(leaks, func(l string) bool { return strings.Contains(l, want) }) {
				t.Errorf("control: the checks did not see %q on the host; they saw %q", want, leaks)
			}
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		files := fx.run(boxOpts{cmd: fx.attack("fsops", reads...)})
		files.at.mustBeDone(t, "fsops")
		clk := fx.run(boxOpts{cmd: fx.attack("clocks")})
		clk.at.mustBeDone(t, "clocks")
		maxUp := (files.duration + clk.duration).Seconds() + 1
		if h.uptime < maxUp+30 {
			t.Fatalf("the host has been up %.0f s only: too little to tell its uptime from the sandbox's", h.uptime)
		}
		for _, l := range hostLeaks(h, files.at, clk.at, maxUp) {
			t.Errorf("ESCAPE host information: %s", l)
		}
		// What programs need is still there: a CPU line per CPU, uptime, btime.
		if a, ok := files.at.get(t, fmt.Sprintf("%d:read:/proc/stat", slices.Index(hostInfoFiles, "/proc/stat"))); ok {
			if n := strings.Count(a.detail, "\ncpu"); !a.ok || n != runtime.NumCPU() || !strings.Contains(a.detail, "btime ") {
				t.Errorf("the sandbox's /proc/stat has %d per-CPU lines (the host %d CPUs): %q", n, runtime.NumCPU(), a.detail)
			}
		}
		files.at.mustSucceed(t, "programs read /proc/uptime", fmt.Sprintf("%d:read:/proc/uptime", slices.Index(hostInfoFiles, "/proc/uptime")))
		fx.verifyHost(files)
		fx.verifyHost(clk)
	})
}
