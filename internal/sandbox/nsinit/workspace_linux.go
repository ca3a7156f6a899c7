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
		// The sandbox user's, whoever the init is.
		return mountTmp("/workspace", w.Size, unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0755,uid=%d,gid=%d", UID, GID))
	case WorkspaceBind:
		if err := attach(w.Lower, dst); err != nil {
			return at("attach workspace", err)
		}
		if err := setattr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true); err != nil {
			return at("set attributes of /workspace", err)
		}
		return protect(dst, w.ReadOnly)
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
	lowers := ""
	for i, l := range w.Layers {
		d := fmt.Sprintf("%s/layer%d", stage, i)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return at("mkdir stage", err)
		}
		if err := attach(l, d); err != nil {
			return atf(err, "attach workspace layer %d", i)
		}
		lowers += d + ":"
	}
	opts := fmt.Sprintf("lowerdir=%s%s,upperdir=%s/upper,workdir=%s/work,userxattr,volatile", lowers, lower, state, state)
	return at("mount /workspace overlay", unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts))
}

// protect makes each of paths (relative to the workspace at dst) read-only with
// everything mounted below it. The subtree is cloned as a detached mount, made
// read-only before anyone can see it, and attached over the original, so there is
// no writable window; the command can neither unmount it (seccomp, no capabilities)
// nor unlink, rename or hard-link across it (EBUSY, EXDEV). The host resolved the
// paths: a symlink on the way or a path leaving the workspace (the workspace changed
// meanwhile) fails the setup rather than protecting something else; a symlink as the
// last component is itself protected.
func protect(dst string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	ws, err := unix.Open(dst, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return at("open /workspace", err)
	}
	defer unix.Close(ws)
	for _, p := range paths {
		how := &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		fd, err := unix.Openat2(ws, p, how)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return atf(err, "open /workspace/%s", p)
		}
		err = bindROOver(fd)
		unix.Close(fd)
		if err != nil {
			return atf(err, "make /workspace/%s read-only", p)
		}
	}
	return nil
}

// bindROOver mounts a read-only clone of the directory, file or symlink at fd over
// it. A symlink cannot be written anyway; mounted over, it cannot be removed or
// replaced either.
func bindROOver(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG && t != unix.S_IFLNK {
		return fmt.Errorf("not a directory, regular file or symlink (mode %o): %w", st.Mode, unix.EINVAL)
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: roAttrs}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}
