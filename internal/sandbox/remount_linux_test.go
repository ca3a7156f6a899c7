package sandbox

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRemountLosesLandlock: a new file system mounted at /workspace of a
// running sandbox, over the old one or in its place, is not writable by the
// sandbox's commands: Landlock's rule for /workspace names the inodes of the
// mount the init saw when it confined itself. So a snapshot continues the
// environment in a new sandbox instead of remounting its workspace.
func TestRemountLosesLandlock(t *testing.T) {
	testenv.RequireRoot(t)
	nsenter, err := exec.LookPath("nsenter")
	testenv.Require(t, err == nil, "nsenter (util-linux) is not installed")
	for _, tc := range []struct{ name, script string }{
		{"over", "mount -t tmpfs -o mode=0777 none /workspace"},
		{"instead", "umount -l /workspace && mount -t tmpfs -o mode=0777 none /workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := startPersistent(t, Config{Workspace: t.TempDir()})
			if out, ex := shIn(t, sb, "echo x > /workspace/before"); ex.ExitCode != 0 {
				t.Fatalf("write before: %v %s", ex, out)
			}
			out, err := exec.Command(nsenter, "--target", strconv.Itoa(sb.Pid()), "--mount", "--pid", "--root", "--wd", "sh", "-c", tc.script).CombinedOutput()
			if err != nil {
				t.Fatalf("remount: %v %s", err, out)
			}
			// The new mount is there (mode 0777: no DAC check refuses), and
			// the write is refused all the same.
			got, _ := shIn(t, sb, "ls -a /workspace; echo x > /workspace/after && echo wrote")
			if strings.Contains(got, "before") {
				t.Fatalf("the remount did not show in the sandbox: %s", got)
			}
			if strings.Contains(got, "wrote") || !strings.Contains(got, "ermission denied") {
				t.Errorf("write after the remount: %s; want permission denied", got)
			}
		})
	}
}
