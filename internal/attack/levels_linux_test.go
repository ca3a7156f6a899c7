package attack

import (
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// outcome is what an attack's test does when the suite runs at a level.
type outcome string

const (
	// stops: the test passes; the level stops the attack and the host checks hold.
	stops outcome = "stops"
	// misses: the test fails; the level does not stop the attack, or the test's
	// checks are another level's (why says which).
	misses outcome = "misses"
	// notRun: not run there. At the process level most attacks would change the
	// host for real (the command is agentbox's user: root, here), or cannot run
	// (there is no /workspace).
	notRun outcome = ""
)

// levelCase is an attack's test and its outcome at each level. At the namespace
// level every attack stops (the suite's own run asserts it) but those whose
// namespace outcome is set, which are run again there.
type levelCase struct {
	test                       string
	process, namespace, gvisor outcome
	why                        string // for a miss
}

// suiteLevels is every attack of the suite. The gvisor misses are checks of the
// namespace level's own mechanisms (seccomp's SIGSYS and EPERM, uid 1000, the
// sandbox's tasks as host processes) that gVisor answers its own way; BENCHMARKS.md
// says what each found.
var suiteLevels = []levelCase{
	{test: "TestEscape_WriteOutsideWritableRoots", gvisor: stops},
	{test: "TestEscape_GitHooksThroughOverlay", gvisor: stops},
	{test: "TestEscape_GitHooksInWriteBind"}, // --write: namespace only
	{test: "TestEscape_PlantedSymlinks", gvisor: stops},
	{test: "TestEscape_DiffOutDoesNotFollowLinks", gvisor: stops},
	{test: "TestEscape_RenameAndHardlinkTricks", gvisor: stops},
	{test: "TestEscape_OutputFilesDoNotFollowPlantedLinks", gvisor: stops},
	{test: "TestEscape_HostMounts"},
	{test: "TestEscape_CommandEndsItsInit"},
	{test: "TestEscape_MountPropagation"},
	{test: "TestEscape_NetworkReachesHost"},
	{test: "TestEscape_LoopbackTCPStaysInside", process: misses, gvisor: stops,
		why: "process: the command shares the host's network, so the host's loopback listeners are reached"},
	{test: "TestEscape_SetuidAndFileCapabilityBinaries"},
	{test: "TestEscape_DeviceNodes", gvisor: misses,
		why: "gvisor: /dev/net/tun and /dev/fuse open: gVisor's own devices, which the test takes for the host's"},
	{test: "TestEscape_SetuidPlantedForTheHost"},
	{test: "TestEscape_ProcHostPidsInvisible"},
	{test: "TestEscape_ProcSysWritesAndKernelFiles"},
	{test: "TestEscape_ProcSelfExeOverwrite_CVE_2019_5736"},
	{test: "TestEscape_RuntimeBinaryAndConfigTampering"},
	{test: "TestEscape_ProcHostInformation", gvisor: misses,
		why: "gvisor: /proc/cmdline and /proc/stat are the Sentry's own, which the test's heuristics flag"},
	{test: "TestEscape_PtraceAndSignalsAgainstInitAndHost"},
	{test: "TestEscape_KillAllFromInside"},
	{test: "TestEscape_SurvivorsAfterSetsidAndDoubleFork"},
	{test: "TestEscape_CrossSandboxChannels"},
	{test: "TestEscape_LeakedFDs_CVE_2024_21626"},
	{test: "TestEscape_SecretsInEnvironmentAndHome", process: misses, gvisor: stops,
		why: "process: the command's HOME is the host workspace's path (the environment is still built from --env only)"},
	{test: "TestEscape_TIOCSTI_CVE_2017_5226"},
	{test: "TestEscape_TerminalThroughStdio"},
	{test: "TestEscape_TerminalEscapeSequences"},
	{test: "TestEscape_ForeignSyscallABIs", gvisor: misses,
		why: "gvisor: i386, x32 and socketcall get ENOSYS from the Sentry; the test wants seccomp's SIGSYS"},
	{test: "TestEscape_HighBitsIn32BitArguments", gvisor: misses,
		why: "gvisor: the calls are the Sentry's to answer; the test wants seccomp's answers"},
	{test: "TestEscape_IoUring", gvisor: misses,
		why: "gvisor: io_uring gets ENOSYS from the Sentry; the test wants seccomp's EPERM"},
	{test: "TestEscape_NestedUserNamespacesAndRemounts", gvisor: misses,
		why: "gvisor: nested namespaces and mounts succeed in the Sentry's emulation; the host kernel makes none"},
	{test: "TestEscape_EgressKernel"},
	{test: "TestEscape_EgressProxyBypass"},
	{test: "TestEscape_EgressSecret"},
	{test: "TestEscape_EgressSettings"},
	{test: "TestEscape_HostKernelServesTheCommand", process: misses, namespace: misses, gvisor: stops,
		why: "process, namespace: the command is a host task; the host kernel serves its system calls (seccomp narrows them) and shows its release"},
	{test: "TestAbuse_ForkBomb"},
	{test: "TestAbuse_MemoryBalloon", gvisor: stops},
	{test: "TestAbuse_DefaultLimits"},
	{test: "TestAbuse_TmpfsFill", gvisor: stops},
	{test: "TestAbuse_WorkspaceFill"},
	{test: "TestAbuse_FdExhaustion", process: stops, gvisor: stops},
	{test: "TestAbuse_StdoutFlood", process: stops, gvisor: stops},
	// Not run at gvisor: the Sentry's RLIMIT_CPU SIGKILL is reported as limit cpu
	// only when the run's cgroup has counted --cpu-time by then, which a quiet host
	// does (1.3 s, stops) and a loaded one may not (585 ms: misses), so neither
	// outcome holds; BENCHMARKS.md ("not at this level").
	{test: "TestAbuse_CPUSpin", process: stops},
	{test: "TestAbuse_FileSize", gvisor: stops},
	{test: "TestAbuse_DiffRenderLimits"},
}

// levelSubtests are the subtests a level runs (-test.run's second element) or
// skips: at the process level only those that touch nothing of the host but
// the test's own files and listeners; at the gvisor level not --write (refused
// there) nor a planting timed by the sandbox's first host process.
var levelSubtests = map[string]struct{ run, skip string }{
	"process": {run: "^(sandbox-env|sandbox-overlay|hard-total|capped-until-timeout)$"},
	"gvisor":  {skip: "/^(sandbox-write-bind|planted-during)$"},
}

// TestSuiteOnEveryLevel runs the attacks of suiteLevels again at each level (the
// test binary re-executed with AGENTBOX_ATTACK_ISOLATION) and requires each to end
// as the table says: an attack a level stops that starts to get through fails,
// and so does a miss that starts to pass (the table, and BENCHMARKS.md, must then
// change). At the namespace level the suite's own run is the rest of the table.
func TestSuiteOnEveryLevel(t *testing.T) {
	if isolation != "namespace" {
		t.Skip("already running at", isolation)
	}
	testenv.SkipShort(t, "re-runs the attacks at two more levels")
	testenv.RequireRoot(t)
	out, err := exec.Command(os.Args[0], "-test.list", "^Test(Escape|Abuse)_").Output()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "Test") {
			listed = append(listed, name)
		}
	}
	for _, name := range listed {
		if !slices.ContainsFunc(suiteLevels, func(c levelCase) bool { return c.test == name }) {
			t.Errorf("%s is not in suiteLevels: say what it does at the process and gvisor levels", name)
		}
	}
	for _, level := range []string{"process", "namespace", "gvisor"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			if level == "gvisor" {
				_, err := exec.LookPath("runsc")
				testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
			}
			want := map[string]outcome{}
			for _, c := range suiteLevels {
				o := map[string]outcome{"process": c.process, "namespace": c.namespace, "gvisor": c.gvisor}[level]
				if o != notRun {
					want[c.test] = o
				}
			}
			got, out := runSuiteAt(t, level, slices.Sorted(maps.Keys(want)))
			defer func() {
				if t.Failed() || testing.Verbose() {
					t.Logf("the suite at --isolation %s:\n%s", level, out)
				}
			}()
			for name, o := range want {
				switch g := got[name]; {
				case g == "":
					t.Errorf("%s did not run at --isolation %s", name, level)
				case g != o:
					t.Errorf("%s %s at --isolation %s, the table says it %s", name, g, level, o)
				}
			}
		})
	}
}

// runSuiteAt runs the tests at level and returns how each ended, and the output.
func runSuiteAt(t *testing.T, level string, tests []string) (map[string]outcome, string) {
	sub := levelSubtests[level]
	run := "^(" + strings.Join(tests, "|") + ")$"
	if sub.run != "" {
		run += "/" + sub.run
	}
	args := []string{"-test.run", run, "-test.v", "-test.count=1"}
	if sub.skip != "" {
		args = append(args, "-test.skip", sub.skip)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), isolationEnv+"="+level)
	out, _ := cmd.CombinedOutput() // failures are expected: the misses
	got := map[string]outcome{}
	for _, m := range resultLine.FindAllStringSubmatch(string(out), -1) {
		switch m[1] {
		case "PASS":
			got[m[2]] = stops
		case "FAIL":
			got[m[2]] = misses
		}
	}
	if !strings.Contains(string(out), `isolation "`+level+`"`) {
		t.Errorf("no run reported isolation %s", level)
	}
	return got, string(out)
}

// resultLine is a top-level test's result in -test.v output.
var resultLine = regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\S+) `)
