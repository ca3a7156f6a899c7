package nsinit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mountWorkspace builds /workspace according to w.Mode.
func mountWorkspace(w Workspace) error {
	dst := base + "/workspace"
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return at("mkdir /workspace", err)
	}
	switch w.Mode {
	case WorkspaceTmpfs, "":
		return mountTmp("/workspace", w.Size, unix.MS_NOSUID|unix.MS_NODEV, "0755")
	case WorkspaceBind:
		if err := attach(w.Lower, dst); err != nil {
			return at("attach workspace", err)
		}
		return at("set attributes of /workspace", setattr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true))
	case WorkspaceOverlay:
		return mountOverlay(w, dst)
	default:
		return at("workspace", fmt.Errorf("unknown mode %q: %w", w.Mode, unix.EINVAL))
	}
}

// mountOverlay stages the lower layer and the state directory, then mounts the
// overlay. The overlay keeps private clones of its layers, so the staged mounts can
// be detached afterwards. userxattr is required in a user namespace: overlay keeps
// its metadata in user.overlay.* instead of trusted.overlay.*, which needs
// CAP_SYS_ADMIN in the initial namespace. volatile skips every sync of the upper
// layer, the final one at unmount included (measured: 5 ms of each run's teardown):
// the layer lives as long as the sandbox, and a host crash loses the run anyway.
func mountOverlay(w Workspace, dst string) error {
	lower, state := stage+"/lower", stage+"/state"
	for _, d := range []string{lower, state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return at("mkdir stage", err)
		}
	}
	if err := attach(w.Lower, lower); err != nil {
		return at("attach workspace", err)
	}
	if err := attach(w.State, state); err != nil {
		return at("attach upper layer", err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work,userxattr,volatile", lower, state, state)
	return at("mount /workspace overlay", unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts))
}
