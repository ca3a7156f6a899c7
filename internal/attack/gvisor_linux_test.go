package attack

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// gvisorSuite is the attacks that apply at the gvisor level as they stand: their
// checks are on the host's files, the run's result and the network, not on the
// sandbox's processes as host processes (gVisor's are not: the Sentry runs them)
// or on the namespace level's own mechanisms (seccomp's SIGSYS and EPERM, uid
// 1000, Landlock). BENCHMARKS.md lists what the others found at the gvisor level.
var gvisorSuite = []string{
	"TestEscape_WriteOutsideWritableRoots",
	"TestEscape_GitHooksThroughOverlay",
	"TestEscape_PlantedSymlinks",
	"TestEscape_DiffOutDoesNotFollowLinks",
	"TestEscape_RenameAndHardlinkTricks",
	"TestEscape_OutputFilesDoNotFollowPlantedLinks",
	"TestEscape_LoopbackTCPStaysInside",
	"TestAbuse_FdExhaustion",
	"TestAbuse_FileSize",
	"TestAbuse_MemoryBalloon",
	"TestAbuse_StdoutFlood",
	"TestAbuse_TmpfsFill",
}

// gvisorSkip is their subtests that do not apply: --write (refused at the gvisor
// level) and a planting timed by the sandbox's first host process.
const gvisorSkip = "/^(sandbox-write-bind|planted-during)$"

// TestSuiteOnGvisor runs gvisorSuite again with every `agentbox run` at
// --isolation gvisor (the test binary re-executed with AGENTBOX_ATTACK_ISOLATION).
func TestSuiteOnGvisor(t *testing.T) {
	if isolation != "namespace" {
		t.Skip("already running at", isolation)
	}
	testenv.SkipShort(t, "re-runs a dozen attacks in gVisor sandboxes")
	testenv.RequireRoot(t)
	_, err := exec.LookPath("runsc")
	testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
	cmd := exec.Command(os.Args[0], "-test.run", "^("+strings.Join(gvisorSuite, "|")+")$", "-test.skip", gvisorSkip, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), isolationEnv+"=gvisor")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the attacks at --isolation gvisor failed: %v\n%s", err, out)
	}
	for _, name := range gvisorSuite {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass at --isolation gvisor", name)
		}
	}
	if !strings.Contains(string(out), `isolation "gvisor"`) {
		t.Errorf("no run reported isolation gvisor:\n%s", out)
	}
}
