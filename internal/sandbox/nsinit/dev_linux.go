package nsinit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// devNodes are the only device nodes in /dev, bound from the host with their expected
// major:minor numbers (checked, so a replaced host node is refused).
var devNodes = []struct {
	name         string
	major, minor uint32
}{
	{"null", 1, 3},
	{"zero", 1, 5},
	{"full", 1, 7},
	{"random", 1, 8},
	{"urandom", 1, 9},
	// The calling process's controlling terminal: in the sandbox, a pty of its
	// own devpts (see mountDev) or none (ENXIO).
	{"tty", 5, 0},
}

// devLinks are the conventional symlinks into /proc/self.
var devLinks = map[string]string{
	"fd":     "/proc/self/fd",
	"stdin":  "/proc/self/fd/0",
	"stdout": "/proc/self/fd/1",
	"stderr": "/proc/self/fd/2",
}

// maxPTYs bounds the terminals of one sandbox (its devpts instance's max).
const maxPTYs = 64

// mountDev builds /dev: a read-only tmpfs holding the nodes of devNodes bound from the
// host, the links of devLinks, a private size-limited /dev/shm, and /dev/pts, a
// devpts instance of the sandbox's own (with /dev/ptmx linked to its ptmx): its
// terminals, for commands run with a tty, reach nothing outside the sandbox. No
// host tty, no block devices, no /dev/kvm.
func mountDev(shmSize int64) error {
	dev := base + "/dev"
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return at("mkdir /dev", err)
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return at("mount /dev", err)
	}
	for _, n := range devNodes {
		dst := dev + "/" + n.name
		if err := mkMountpoint(dst, false); err != nil {
			return atf(err, "mountpoint /dev/%s", n.name)
		}
		if err := unix.Mount("/dev/"+n.name, dst, "", unix.MS_BIND, ""); err != nil {
			return atf(err, "bind /dev/%s", n.name)
		}
		if err := setattr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false); err != nil {
			return atf(err, "set attributes of /dev/%s", n.name)
		}
		if err := checkCharDev(dst, n.major, n.minor); err != nil {
			return atf(err, "check /dev/%s", n.name)
		}
	}
	for name, target := range devLinks {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return atf(err, "symlink /dev/%s", name)
		}
	}
	if err := os.Mkdir(dev+"/pts", 0o755); err != nil {
		return at("mkdir /dev/pts", err)
	}
	// newinstance: never the host's ptys. No gid=5: the sandbox maps no tty group.
	opts := fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", maxPTYs)
	if err := unix.Mount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, opts); err != nil {
		return at("mount /dev/pts", err)
	}
	if err := os.Symlink("pts/ptmx", dev+"/ptmx"); err != nil {
		return at("symlink /dev/ptmx", err)
	}
	if err := mountTmp("/dev/shm", shmSize, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777"); err != nil {
		return err
	}
	return at("make /dev read-only", setattr(dev, unix.MOUNT_ATTR_RDONLY, false))
}

// errNotDevice says a path that should be a given character device is not.
var errNotDevice = fmt.Errorf("not the expected character device: %w", unix.ENODEV)

// checkCharDev verifies that path is the character device major:minor.
func checkCharDev(path string, major, minor uint32) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != major || unix.Minor(st.Rdev) != minor {
		return errNotDevice
	}
	return nil
}
