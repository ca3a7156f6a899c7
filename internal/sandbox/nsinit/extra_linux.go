package nsinit

import (
	"fmt"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// mountExtra mounts each of ms at its target under the new root: ro and rw as
// binds (read-only, nosuid, nodev for ro; the host set the same attributes on a
// detached tree already), cow as an overlay whose lower layer is the source and
// whose upper layer is a size-limited tmpfs of its own, as the workspace's is.
func mountExtra(ms []Mount) error {
	for i, m := range ms {
		if !path.IsAbs(m.Target) || path.Clean(m.Target) != m.Target {
			return at("mount "+m.Target, fmt.Errorf("target not absolute and clean: %w", unix.EINVAL))
		}
		dst := base + m.Target
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return atf(err, "mkdir %s", m.Target)
		}
		switch m.Mode {
		case "ro", "rw":
			if err := attach(m.Source, dst); err != nil {
				return atf(err, "attach %s", m.Target)
			}
			set := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
			if m.Mode == "ro" {
				set |= unix.MOUNT_ATTR_RDONLY
			}
			if err := setattr(dst, set, true); err != nil {
				return atf(err, "set attributes of %s", m.Target)
			}
		case "cow":
			if err := mountCow(m, dst, strconv.Itoa(i)); err != nil {
				return err
			}
		default:
			return at("mount "+m.Target, fmt.Errorf("unknown mode %q: %w", m.Mode, unix.EINVAL))
		}
	}
	return nil
}

// mountCow stages the source and a fresh tmpfs, then mounts the overlay at dst
// (see mountOverlay for userxattr and volatile).
func mountCow(m Mount, dst, n string) error {
	lower, state := stage+"/m"+n+"-lower", stage+"/m"+n+"-state"
	for _, d := range []string{lower, state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return at("mkdir stage", err)
		}
	}
	if err := attach(m.Source, lower); err != nil {
		return atf(err, "attach %s", m.Target)
	}
	opts := fmt.Sprintf("size=%d,mode=0755", m.Size)
	if err := unix.Mount("tmpfs", state, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return atf(err, "mount the private layer of %s", m.Target)
	}
	for _, d := range []string{state + "/upper", state + "/work"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return atf(err, "mkdir the private layer of %s", m.Target)
		}
	}
	// The overlay's root takes its owner and mode from the upper layer's root: give
	// it the lower's, as a copy-up would, or the init's uid 0 would own it and
	// commands (uid 1000) could not create files at the top of the mount.
	var st unix.Stat_t
	if err := unix.Stat(lower, &st); err != nil {
		return atf(err, "stat %s", m.Target)
	}
	if err := os.Lchown(state+"/upper", int(st.Uid), int(st.Gid)); err != nil {
		return atf(err, "chown the private layer of %s", m.Target)
	}
	if err := os.Chmod(state+"/upper", os.FileMode(st.Mode&0o777)); err != nil {
		return atf(err, "chmod the private layer of %s", m.Target)
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work,userxattr,volatile", lower, state, state)
	return atf(unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, data), "mount the %s overlay", m.Target)
}
