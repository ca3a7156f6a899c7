package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// openMountSource opens a mount's source directory without following any
// symlink on the way (RESOLVE_NO_SYMLINKS), so a link planted in the path cannot
// point the mount elsewhere; the descriptor is what gets mounted.
func openMountSource(src string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, src, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == nil {
		return os.NewFile(uintptr(fd), src), nil
	}
	if fi, lerr := os.Lstat(src); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("mount source %s is a symlink; name the directory itself", src)
	}
	switch err {
	case unix.ELOOP, unix.EXDEV:
		return nil, fmt.Errorf("mount source %s: a directory above it is a symlink; name the directory by its real path", src)
	case unix.ENOTDIR:
		return nil, fmt.Errorf("mount source %s: not a directory", src)
	}
	return nil, fmt.Errorf("mount source %s: %w", src, err)
}

// prepareMounts opens each mount's source and passes it to the init. As root each
// becomes a detached mount tree cloned from the opened directory, with its
// attributes set before the init gets it: read-only (ro), or idmapped so that the
// directory's owner is the sandbox user (rw, and cow, whose overlay writes new
// files into directories of the lower layer). As an unprivileged user the init
// binds the checked path, as it does the workspace.
func (s *Sandbox) prepareMounts(add func(*os.File) int) ([]nsinit.Mount, error) {
	if err := checkMounts(s.cfg.Mounts); err != nil {
		return nil, err
	}
	var out []nsinit.Mount
	for _, m := range s.cfg.Mounts {
		mode := m.Mode
		if mode == "" {
			mode = MountReadOnly
		}
		size := m.Size
		if size == 0 {
			size = s.cfg.WorkspaceSize
		}
		dir, err := openMountSource(m.Source)
		if err != nil {
			return nil, err
		}
		nm := nsinit.Mount{Target: m.Target, Mode: string(mode), Size: size}
		if !s.id.root || forcePaths {
			dir.Close()
			nm.Source = nsinit.Source{Path: m.Source}
			out = append(out, nm)
			continue
		}
		tree, err := mountTree(dir, mode, s.id)
		dir.Close()
		if err != nil {
			return nil, &MissingError{Mechanism: "detached mounts", Err: fmt.Errorf("mount %s: %w", m.Target, err)}
		}
		nm.Source = nsinit.Source{FD: add(tree)}
		out = append(out, nm)
	}
	return out, nil
}

// mountTree clones the directory at dir into a detached mount tree with the
// attributes of mode.
func mountTree(dir *os.File, mode MountMode, id *identity) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return nil, err
	}
	fd, err := unix.OpenTree(int(dir.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return nil, fmt.Errorf("open_tree: %w", err)
	}
	tree := os.NewFile(uintptr(fd), "mount")
	// Private, as detachedTree makes the workspace's: a clone of a shared host mount
	// would be its peer, and host mounts below the source would show inside.
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Propagation: unix.MS_PRIVATE}); err != nil {
		tree.Close()
		return nil, fmt.Errorf("make private: %w", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if mode == MountReadOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	} else {
		ns, err := idmapOwner(int(st.Uid), int(st.Gid), id)
		if err != nil {
			tree.Close()
			return nil, fmt.Errorf("idmap: %w", err)
		}
		defer ns.Close()
		attr.Attr_set |= unix.MOUNT_ATTR_IDMAP
		attr.Userns_fd = uint64(ns.Fd())
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		tree.Close()
		return nil, fmt.Errorf("mount_setattr: %w", err)
	}
	return tree, nil
}
