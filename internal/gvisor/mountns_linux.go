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

// overlayMount is the copy-on-write workspace: lower is the host directory;
// the upper and work layers are made in layers, a tmpfs of size bytes when size
// is set, with the upper layer's root owned by uid and gid with mode.
type overlayMount struct {
	lower, layers, merged string
	size                  int64
	uid, gid              uint32
	mode                  os.FileMode
	// mounts are shown at views/<i> (copy-on-write: views/<i>.lower below an
	// overlay whose layers are layers/m<i>).
	mounts []Mount
	views  string
}

// startIsolated starts cmd from a locked OS thread of its own that has unshared
// its mount namespace (the overlay is mounted there: only runsc and what it starts
// see it, and it vanishes with them) and, for the fork only, joined cg (v1 moves
// single threads; v2 clones straight into the group). The thread lives until
// release is closed, so cmd's parent-death signal fires only when agentbox dies
// or the run is over; then it exits with its namespace, never reused.
//
// It returns O_PATH descriptors, opened in that namespace, of ws (the workspace
// as runsc sees it: host-side file operations go through it) and of the
// overlay's upper layer (nil without one).
func startIsolated(cmd *exec.Cmd, cg *cgroup.Cgroup, overlay *overlayMount, ws string, release <-chan struct{}) (wsDir, upper *os.File, err error) {
	type result struct {
		ws, upper *os.File
		err       error
	}
	started := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		var r result
		r.upper, r.err = isolatedStart(cmd, cg, overlay)
		if r.err == nil {
			r.ws, r.err = openPath(ws)
		}
		started <- r
		if r.err == nil {
			<-release
		}
	}()
	r := <-started
	return r.ws, r.upper, r.err
}

func openPath(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Base(p), err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// layers makes the overlay's upper and work directories (on a tmpfs of their
// own when its size is bounded) and returns their paths.
func (o *overlayMount) makeLayers() (upper, work string, err error) {
	if o.size > 0 {
		if err := unix.Mount("tmpfs", o.layers, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size="+strconv.FormatInt(o.size, 10)); err != nil {
			return "", "", fmt.Errorf("%w: mount the workspace's layer: %w", ErrUnsupported, err)
		}
	}
	upper, work = filepath.Join(o.layers, "upper"), filepath.Join(o.layers, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", "", err
		}
	}
	if err := os.Chown(upper, int(o.uid), int(o.gid)); err != nil {
		return "", "", err
	}
	return upper, work, os.Chmod(upper, o.mode)
}

func isolatedStart(cmd *exec.Cmd, cg *cgroup.Cgroup, overlay *overlayMount) (upperDir *os.File, err error) {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return nil, fmt.Errorf("%w: unshare the mount namespace: %w", ErrUnsupported, err)
	}
	// Nothing mounted here may propagate to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", err)
	}
	if overlay != nil {
		upper, work, err := overlay.makeLayers()
		if err != nil {
			return nil, err
		}
		opts := "lowerdir=" + escape(overlay.lower) + ",upperdir=" + escape(upper) + ",workdir=" + escape(work) + ",userxattr"
		if err := unix.Mount("overlay", overlay.merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			// userxattr is for user namespaces; as root the trusted xattrs work.
			opts = strings.TrimSuffix(opts, ",userxattr")
			if err := unix.Mount("overlay", overlay.merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
				return nil, fmt.Errorf("%w: mount the workspace overlay: %w", ErrUnsupported, err)
			}
		}
		if upperDir, err = openPath(upper); err != nil {
			return nil, err
		}
		for i, mt := range overlay.mounts {
			if err := overlay.mount(i, mt); err != nil {
				upperDir.Close()
				return nil, fmt.Errorf("mount %s: %w", mt.Target, err)
			}
		}
	}
	defer func() {
		if err != nil && upperDir != nil {
			upperDir.Close()
		}
	}()
	if cg.Version() == 2 {
		fd, err := cg.FD()
		if err != nil {
			return nil, err
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		return upperDir, cmd.Start()
	}
	tid := unix.Gettid()
	home, err := threadCgroups(tid)
	if err != nil {
		return nil, err
	}
	for _, dir := range cg.Paths() {
		if err := writeTask(dir, tid); err != nil {
			return nil, fmt.Errorf("join cgroup: %w", err)
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
	return upperDir, startErr
}

// mount binds mt's source, opened without following a symlink, at its view
// (read-only), or below an overlay there.
func (o *overlayMount) mount(i int, mt Mount) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, mt.Source, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("open %s without following symlinks: %w", mt.Source, err)
	}
	defer unix.Close(fd)
	view := filepath.Join(o.views, strconv.Itoa(i))
	at := view
	if mt.CopyOnWrite {
		at = view + ".lower"
	}
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	if err := unix.Mount("", at, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return err
	}
	if !mt.CopyOnWrite {
		return nil
	}
	layers := filepath.Join(o.layers, "m"+strconv.Itoa(i))
	upper, work := filepath.Join(layers, "upper"), filepath.Join(layers, "work")
	for _, d := range []string{layers, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(at, &st); err != nil {
		return err
	}
	if err := os.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := os.Chmod(upper, os.FileMode(st.Mode).Perm()); err != nil {
		return err
	}
	opts := "lowerdir=" + escape(at) + ",upperdir=" + escape(upper) + ",workdir=" + escape(work)
	return unix.Mount("overlay", view, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
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
