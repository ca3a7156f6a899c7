package gvisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/cgroup"
	"golang.org/x/sys/unix"
)

// overlayMount is the copy-on-write workspace: lower is the host directory.
type overlayMount struct{ lower, upper, work, merged string }

// startIsolated starts cmd from a locked OS thread of its own that has unshared
// its mount namespace (the overlay is mounted there: only runsc and what it starts
// see it, and it vanishes with them) and, for the fork only, joined cg (v1 moves
// single threads; v2 clones straight into the group). The thread lives until
// release is closed, so cmd's parent-death signal fires only when agentbox dies
// or the run is over; then it exits with its namespace, never reused.
func startIsolated(cmd *exec.Cmd, cg *cgroup.Cgroup, overlay *overlayMount, release <-chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := isolatedStart(cmd, cg, overlay); err != nil {
			started <- err
			return
		}
		started <- nil
		<-release
	}()
	return <-started
}

func isolatedStart(cmd *exec.Cmd, cg *cgroup.Cgroup, overlay *overlayMount) error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("%w: unshare the mount namespace: %w", ErrUnsupported, err)
	}
	// Nothing mounted here may propagate to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if overlay != nil {
		opts := "lowerdir=" + escape(overlay.lower) + ",upperdir=" + escape(overlay.upper) + ",workdir=" + escape(overlay.work) + ",userxattr"
		if err := unix.Mount("overlay", overlay.merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			// userxattr is for user namespaces; as root the trusted xattrs work.
			opts = strings.TrimSuffix(opts, ",userxattr")
			if err := unix.Mount("overlay", overlay.merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
				return fmt.Errorf("%w: mount the workspace overlay: %w", ErrUnsupported, err)
			}
		}
	}
	if cg.Version() == 2 {
		fd, err := cg.FD()
		if err != nil {
			return err
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		return cmd.Start()
	}
	tid := unix.Gettid()
	home, err := threadCgroups(tid)
	if err != nil {
		return err
	}
	for _, dir := range cg.Paths() {
		if err := writeTask(dir, tid); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	startErr := cmd.Start()
	// Back to where the thread was: the group must hold only the sandbox.
	for _, dir := range cg.Paths() {
		back, ok := home[hierarchyOf(dir)]
		if !ok {
			continue
		}
		if err := writeTask(back, tid); err != nil && startErr == nil {
			startErr = fmt.Errorf("leave cgroup: %w", err)
		}
	}
	return startErr
}

// threadCgroups maps each v1 hierarchy's mount (/sys/fs/cgroup/<controllers>) to
// the directory of it that holds thread tid.
func threadCgroups(tid int) (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] != "" {
			mount := filepath.Join("/sys/fs/cgroup", parts[1])
			out[mount] = filepath.Join(mount, parts[2])
		}
	}
	return out, nil
}

// hierarchyOf is the hierarchy mount a group directory lives in:
// <mount>/<cgroup.DefaultParent>/<name>.
func hierarchyOf(dir string) string { return filepath.Dir(filepath.Dir(dir)) }

func writeTask(dir string, tid int) error {
	return os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0)
}

// escape protects the overlay option separators in a path.
func escape(p string) string {
	return strings.NewReplacer(`\`, `\\`, ",", `\,`, ":", `\:`).Replace(p)
}
