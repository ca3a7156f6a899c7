package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/cgroup"
)

// hostHelperEnv makes the test binary act as a host that starts a sandbox, prints
// its init's pid, host uid, cgroup name and reservation, and then waits to be killed.
const hostHelperEnv = "AGENTBOX_SANDBOX_TEST_HOST"

// runHostHelper is called by TestMain when hostHelperEnv is set.
func runHostHelper() {
	sb, err := Start(Config{Argv: []string{"/bin/sh", "-c", "(setsid sleep 60 &); sleep 60"}}, Stdio{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(sb.Pid(), sb.HostUID(), sb.cg.Name(), sb.id.reserve)
	select {}
}

// TestHostDeath: when the agentbox process dies (SIGKILL, no Destroy), the init's
// parent-death signal kills it and with it the pid namespace: nothing of the
// sandbox keeps running. Only the empty cgroup and the uid reservation remain for
// cgroup.Reap and the next start to clean up.
func TestHostDeath(t *testing.T) {
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), hostHelperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q %v", line, err)
	}
	f := strings.Fields(line)
	if len(f) != 4 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	initPid, _ := strconv.Atoi(f[0])
	uid, _ := strconv.Atoi(f[1])
	t.Cleanup(func() {
		cgroup.Reap("", f[2])
		os.Remove(f[3])
	})
	waitForChild(t, initPid) // the command runs
	cmd.Process.Kill()
	cmd.Wait()
	// The init too: it may linger as a zombie until the host's init reaps it.
	if !settle(func() bool { return len(hostProcsOf(uid)) == 0 }) {
		t.Errorf("sandbox processes alive after the host died (init %d): %v", initPid, hostProcsOf(uid))
	}
}
