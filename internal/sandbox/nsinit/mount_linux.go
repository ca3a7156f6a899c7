package nsinit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// base is where the new root's tmpfs is mounted before the pivot. It is a path that
// exists on every Linux host; the mount lives only in the sandbox's private mount
// namespace (bubblewrap uses the same spot).
const base = "/tmp"

// stage holds detached host mounts (workspace, upper layer, root file system) while
// the new root is built; it is emptied and removed before the pivot.
const stage = base + "/.stage"

// Mount attributes for read-only views of host files.
const roAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

// setattr sets mount attributes on the mount at path, recursively if rec. Unlike a
// MS_REMOUNT, mount_setattr leaves the locked flags of mounts inherited from the host
// alone and covers every submount of a recursive bind.
func setattr(path string, set uint64, rec bool) error {
	flags := uint(0)
	if rec {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, flags, &unix.MountAttr{Attr_set: set})
}

// bindRO binds src (a directory or a file, with everything mounted below it) onto
// dst, which must exist, and makes the whole tree read-only, nosuid and nodev.
func bindRO(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return setattr(dst, roAttrs, true)
}

// pinPaths opens every Source given by path before anything is mounted over the
// host's /tmp (where the new root goes, and where workspaces and upper layers often
// live), and points it at the open directory: /proc/self/fd/N reaches it later
// whatever is mounted on top. Opened here, in the sandbox's mount namespace, it can
// be bound; an O_PATH descriptor the host opened could not (EINVAL: another mount
// namespace's mount). The descriptors are close-on-exec and closed by unpin.
func pinPaths(srcs ...*Source) (unpin func(), err error) {
	var fds []int
	unpin = func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	for _, src := range srcs {
		if src.FD >= 3 || src.Path == "" {
			continue
		}
		fd, err := unix.Open(src.Path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			unpin()
			return nil, err
		}
		fds = append(fds, fd)
		src.Path = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	return unpin, nil
}

// attach makes src appear at dst (a directory that must exist): a detached mount
// passed as a file descriptor is moved there, a path is bound there.
func attach(src Source, dst string) error {
	if src.FD >= 3 {
		defer unix.Close(src.FD)
		return unix.MoveMount(src.FD, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
	}
	return unix.Mount(src.Path, dst, "", unix.MS_BIND|unix.MS_REC, "")
}

// mkMountpoint creates an empty directory or file at dst to mount over.
func mkMountpoint(dst string, dir bool) error {
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// mirror reproduces host entry src at dst: a symlink is recreated as the same
// symlink (so /bin -> usr/bin stays a link), a directory or file is bound read-only.
// A missing src is skipped.
func mirror(src, dst, name string) error {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return atf(err, "stat %s", name)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return atf(err, "readlink %s", name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return atf(err, "mkdir %s", filepath.Dir(name))
		}
		return atf(os.Symlink(target, dst), "symlink %s", name)
	case fi.IsDir() || fi.Mode().IsRegular():
		if err := mkMountpoint(dst, fi.IsDir()); err != nil {
			return atf(err, "mountpoint %s", name)
		}
		return atf(bindRO(src, dst), "bind %s", name)
	default:
		return nil
	}
}

// mountSystem mirrors the system directories of the root file system at prefix.
func mountSystem(prefix string) error {
	for _, d := range systemDirs {
		if err := mirror(prefix+"/"+d, base+"/"+d, "/"+d); err != nil {
			return err
		}
	}
	return nil
}

// mountTmp mounts a size-limited tmpfs at the sandbox path name; opts are further
// tmpfs options ("mode=1777").
func mountTmp(name string, size int64, flags uintptr, opts string) error {
	dst := base + name
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return atf(err, "mkdir %s", name)
	}
	data := fmt.Sprintf("size=%d,%s", size, opts)
	return atf(unix.Mount("tmpfs", dst, "tmpfs", flags, data), "mount %s", name)
}

// mountRoot builds the new root under base and pivots into it. The order matters:
// /dev before /proc (the /proc masks bind /dev/null), staging last. btime is the
// sandbox's boot time (see newTimeNamespace).
func mountRoot(s *Spec, st *status, btime int64) error {
	// Nothing we mount may propagate to the host, and nothing the host mounts later
	// may propagate in.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return at("make / rprivate", err)
	}
	srcs := []*Source{&s.RootFS, &s.Workspace.Lower, &s.Workspace.State}
	for i := range s.Workspace.Layers {
		srcs = append(srcs, &s.Workspace.Layers[i])
	}
	if s.Image != nil {
		srcs = append(srcs, &s.Image.Layers, &s.Image.State)
	}
	for i := range s.Mounts {
		srcs = append(srcs, &s.Mounts[i].Source)
	}
	unpin, err := pinPaths(srcs...)
	if err != nil {
		return at("open host directories", err)
	}
	defer unpin()
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m,nr_inodes=4096"); err != nil {
		return at("mount root tmpfs", err)
	}
	rf := &rootFiles{image: s.Image != nil}
	prefix := ""
	switch {
	case s.Image != nil:
		if err := mountImage(s.Image); err != nil {
			return err
		}
		prefix = base
		// The init's own mount points, made real directories before anything
		// is mounted on them. (The staging area is named in the new root, not
		// as the host path it is before the pivot: a build step's layer held an
		// empty /tmp/.stage.)
		for _, d := range []string{strings.TrimPrefix(stage, base), "/dev", "/proc", "/tmp", "/workspace"} {
			if err := ensureDir(d); err != nil {
				return err
			}
		}
		if rf.etc, err = imageEtc(); err != nil {
			return err
		}
		for _, m := range s.Mounts {
			if err := ensureDir(m.Target); err != nil {
				return err
			}
		}
		dirs, err := imageDirs()
		if err != nil {
			return err
		}
		s.Landlock.ReadWrite = append(s.Landlock.ReadWrite, dirs...)
	case !s.RootFS.IsZero():
		prefix = stage + "/rootfs"
		if err := os.MkdirAll(prefix, 0o700); err != nil {
			return at("mkdir stage", err)
		}
		if err := attach(s.RootFS, prefix); err != nil {
			return at("attach rootfs", err)
		}
	}
	if s.Image == nil {
		if err := mountSystem(prefix); err != nil {
			return err
		}
	}
	// A build keeps the image's users, which its packages need; a host base has
	// none of its own (the host's stay out), so its build gets the generated ones.
	if err := mountEtc(prefix, rf, s.Image != nil && s.Image.Build && !s.Image.Host); err != nil {
		return err
	}
	if s.Network != nil {
		if err := mountTrust(prefix, s.Network.CACert, rf); err != nil {
			return err
		}
	}
	st.mark("mount-system")
	if err := mountDev(s.ShmSize); err != nil {
		return err
	}
	if err := mountProc(btime); err != nil {
		return err
	}
	if err := mountTmp("/tmp", s.TmpSize, unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return err
	}
	st.mark("mount-proc-dev-tmp")
	if err := mountWorkspace(s.Workspace); err != nil {
		return err
	}
	if err := mountExtra(s.Mounts); err != nil {
		return err
	}
	if err := unstage(); err != nil {
		return err
	}
	st.mark("mount-workspace")
	if err := pivot(s.Image == nil); err != nil {
		return err
	}
	st.mark("pivot")
	return nil
}

// unstage detaches whatever is still mounted in the staging area and removes it.
func unstage() error {
	ents, err := os.ReadDir(stage)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return at("read stage", err)
	}
	for _, e := range ents {
		p := stage + "/" + e.Name()
		// Not every entry is still a mount point (the overlay keeps private
		// clones of its layers); EINVAL says so.
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			return atf(err, "unmount stage %s", e.Name())
		}
		if err := os.Remove(p); err != nil {
			return atf(err, "remove stage %s", e.Name())
		}
	}
	return at("remove stage", os.Remove(stage))
}

// pivot makes base the root and detaches the host's root. pivot_root(".", ".")
// stacks the old root on top of the new one at "."; unmounting "." then removes it
// without needing a directory for it (runc does the same). A root tmpfs is made
// read-only (readOnly); an image's overlay stays writable: its writes land in
// the private upper layer.
func pivot(readOnly bool) error {
	if err := unix.Chdir(base); err != nil {
		return at("chdir new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return at("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return at("detach old root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return at("chdir /", err)
	}
	if !readOnly {
		return nil
	}
	return at("make / read-only", setattr("/", unix.MOUNT_ATTR_RDONLY, false))
}
