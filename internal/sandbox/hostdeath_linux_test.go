package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// hostHelperEnv makes the test binary act as a host that starts a sandbox on the
// workspace named by its value, prints its init's pid, host uid, cgroup name,
// reservation and state directory, and then waits to be killed.
const hostHelperEnv = "AGENTBOX_SANDBOX_TEST_HOST"

// reapHelperEnv makes the test binary run ReapStale in a mount namespace of its
// own from which it first detaches the tmpfs on the state directory named by its
// value: an agentbox process whose mount namespace does not show another's tmpfs.
const reapHelperEnv = "AGENTBOX_SANDBOX_TEST_REAP"

// runReapHelper is called by TestMain when reapHelperEnv is set.
func runReapHelper() {
	if err := unix.Unmount(os.Getenv(reapHelperEnv), unix.MNT_DETACH); err != nil {
		fmt.Println("unmount:", err)
		os.Exit(1)
	}
	if err := ReapStale(); err != nil {
		fmt.Println("ReapStale:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runHostHelper is called by TestMain when hostHelperEnv is set.
func runHostHelper() {
	cfg := Config{Argv: []string{"/bin/sh", "-c", "(setsid sleep 60 &); sleep 60"}, Workspace: os.Getenv(hostHelperEnv)}
	if dir, ok := strings.CutPrefix(cfg.Workspace, "build:"); ok {
		// A build sandbox on the host's directories, upper and work in dir.
		cfg.Workspace, cfg.build = "", &buildRoot{host: true, upper: filepath.Join(dir, "upper"), work: filepath.Join(dir, "work")}
	}
	sb, err := Start(cfg, Stdio{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	state := sb.state
	if state == "" {
		state = "-"
	}
	fmt.Println(sb.Pid(), sb.HostUID(), sb.cg.Name(), sb.id.reserve, state)
	select {}
}

// deadHost is what a killed host helper left behind.
type deadHost struct {
	initPid, uid    int
	cgroup, reserve string
	state           string
}

// killedHost starts a host helper with an overlay workspace, waits until its
// command runs, and SIGKILLs it: an agentbox process that dies without Destroy.
func killedHost(t *testing.T) deadHost {
	t.Helper()
	testenv.RequireRoot(t)
	return killHost(t, workspaceFixture(t))
}

// killedBuildHost is killedHost with a build sandbox.
func killedBuildHost(t *testing.T) deadHost {
	t.Helper()
	testenv.RequireRoot(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(dir, d), image.IDBase, image.IDBase); err != nil {
			t.Fatal(err)
		}
	}
	return killHost(t, "build:"+dir)
}

func killHost(t *testing.T, workspace string) deadHost {
	t.Helper()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), hostHelperEnv+"="+workspace)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 5 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q (%v)", line, err)
	}
	h := deadHost{cgroup: f[2], reserve: f[3], state: f[4]}
	h.initPid, _ = strconv.Atoi(f[0])
	h.uid, _ = strconv.Atoi(f[1])
	t.Cleanup(func() {
		cgroup.Reap("", f[2])
		os.Remove(f[3])
	})
	waitForChild(t, h.initPid) // the command runs
	cmd.Process.Kill()
	cmd.Wait()
	return h
}

// TestHostDeath: when the agentbox process dies (SIGKILL, no Destroy), the init's
// parent-death signal kills it and with it the pid namespace: nothing of the
// sandbox keeps running. Only the empty cgroup, the uid reservation and the state
// directory remain, for cgroup.Reap, the next start and ReapStale to clean up.
func TestHostDeath(t *testing.T) {
	h := killedHost(t)
	// The init too: it may linger as a zombie until the host's init reaps it.
	if !settle(func() bool { return len(hostProcsOf(h.uid)) == 0 }) {
		t.Errorf("sandbox processes alive after the host died (init %d): %v", h.initPid, hostProcsOf(h.uid))
	}
	if err := ReapStale(); err != nil {
		t.Error(err)
	}
}

// TestReapStale: ReapStale unmounts and removes the state directory a dead agentbox
// process left behind, and any other unlocked one, removes its host id reservation
// and the cgroup that names, but leaves a live sandbox's alone (its owner holds the
// locks) and entries that are not state directories.
func TestReapStale(t *testing.T) {
	live := startWith(t, Config{Argv: []string{"/bin/sleep", "60"}, Workspace: workspaceFixture(t)}, false)
	defer func() {
		live.sb.Kill()
		live.finish(t, "")
	}()
	dead := killedHost(t)
	if m := hostMountsUnder(t, dead.state); len(m) != 1 {
		t.Fatalf("the dead host's state directory %s has mounts %q, want its tmpfs", dead.state, m)
	}
	stray := filepath.Join(stateRoot, statePrefix+"stray")
	other := filepath.Join(stateRoot, "not-a-sandbox")
	for _, d := range []string{stray, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Remove(other)

	if err := ReapStale(); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	for _, d := range []string{dead.state, stray} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", d, err)
		}
		if m := hostMountsUnder(t, d); len(m) != 0 {
			t.Errorf("%s still has mounts %q", d, m)
		}
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("ReapStale removed %s: %v", other, err)
	}
	if _, err := os.Lstat(dead.reserve); !os.IsNotExist(err) {
		t.Errorf("the dead host's reservation %s still there (%v)", dead.reserve, err)
	}
	if d := cgroupDirs(dead.cgroup); len(d) > 0 {
		t.Errorf("the dead host's cgroup still there: %q", d)
	}
	if _, err := os.Lstat(live.sb.id.reserve); err != nil {
		t.Errorf("the live sandbox's reservation: %v", err)
	}
	for _, p := range live.sb.cg.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the live sandbox's cgroup: %v", err)
		}
	}
	if m := hostMountsUnder(t, live.sb.state); len(m) != 1 {
		t.Errorf("the live sandbox's state %s has mounts %q after ReapStale, want its tmpfs", live.sb.state, m)
	}
	if _, err := os.Stat(live.sb.UpperDir()); err != nil {
		t.Errorf("the live sandbox's upper layer: %v", err)
	}
}

// TestReapStaleOtherMountNamespace: an agentbox process in another mount namespace,
// where a live sandbox's tmpfs is not mounted over its state directory, sees the
// directory beneath; its ReapStale must still see the sandbox's lock there and
// leave it alone (it once removed the directory, and with it the live tmpfs).
func TestReapStaleOtherMountNamespace(t *testing.T) {
	live := startWith(t, Config{Argv: []string{"/bin/sleep", "60"}, Workspace: workspaceFixture(t)}, false)
	defer func() {
		live.sb.Kill()
		live.finish(t, "")
	}()
	if m := hostMountsUnder(t, live.sb.state); len(m) != 1 {
		t.Fatalf("the live sandbox's state %s has mounts %q, want its tmpfs", live.sb.state, m)
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), reapHelperEnv+"="+live.sb.state)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if m := hostMountsUnder(t, live.sb.state); len(m) != 1 {
		t.Errorf("the live sandbox's state %s has mounts %q after ReapStale elsewhere, want its tmpfs", live.sb.state, m)
	}
	if _, err := os.Stat(live.sb.UpperDir()); err != nil {
		t.Errorf("the live sandbox's upper layer: %v", err)
	}
}

// cgroupDirs lists the directories of the sandbox cgroup name in every v1
// hierarchy and the v2 one.
func cgroupDirs(name string) []string {
	m, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroup.DefaultParent + "/" + name)
	m2, _ := filepath.Glob("/sys/fs/cgroup/" + cgroup.DefaultParent + "/" + name)
	return append(m, m2...)
}

// TestReapStaleBuild: a build sandbox holds a reservation too (its ids are the
// shared foreign range, so it is named build-<tag>), and ReapStale removes it
// and the cgroup it names once the agentbox that started it is dead; a live
// build sandbox's stays.
func TestReapStaleBuild(t *testing.T) {
	dead := killedBuildHost(t)
	if !strings.HasPrefix(filepath.Base(dead.reserve), buildReservePrefix) {
		t.Fatalf("the build sandbox's reservation is %q", dead.reserve)
	}
	if b, err := os.ReadFile(filepath.Join(dead.reserve, cgroupRecord)); err != nil || string(b) != dead.cgroup {
		t.Fatalf("the reservation names cgroup %q (%v), the sandbox's is %q", b, err, dead.cgroup)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o711)
	for _, d := range []string{"upper", "work"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
		os.Chown(filepath.Join(dir, d), image.IDBase, image.IDBase)
	}
	live := startWith(t, Config{Argv: []string{"/bin/sleep", "60"},
		build: &buildRoot{host: true, upper: filepath.Join(dir, "upper"), work: filepath.Join(dir, "work")}}, false)
	defer func() {
		live.sb.Kill()
		live.finish(t, "")
	}()
	if err := ReapStale(); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	if _, err := os.Lstat(dead.reserve); !os.IsNotExist(err) {
		t.Errorf("the dead build sandbox's reservation %s still there (%v)", dead.reserve, err)
	}
	if d := cgroupDirs(dead.cgroup); len(d) > 0 {
		t.Errorf("the dead build sandbox's cgroup still there: %q", d)
	}
	if _, err := os.Lstat(live.sb.id.reserve); err != nil || !strings.HasPrefix(filepath.Base(live.sb.id.reserve), buildReservePrefix) {
		t.Errorf("the live build sandbox's reservation %q: %v", live.sb.id.reserve, err)
	}
	for _, p := range live.sb.cg.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the live build sandbox's cgroup: %v", err)
		}
	}
}
