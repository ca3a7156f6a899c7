package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// A disk layer (Config.DiskLayers) is an ext4 file system in a sparse file of
// the layer's size, on a loop device, mounted where the tmpfs would be. The
// file is unlinked once the loop device holds it and the device clears itself
// when its last mount goes (LO_FLAGS_AUTOCLEAR), so the layer's disk space
// goes with its last user (the sandbox, a sealed Layer) as a tmpfs's pages do,
// and a crash of agentbox leaves a kept layer mounted as it leaves a tmpfs.
// Direct I/O to the file keeps its data out of the page cache twice over.

// layerImage is the sparse file's name in the directory the layer is mounted
// on, hidden beneath the mount and unlinked at once.
const layerImage = ".layer.img"

// mountDiskLayer mounts a fresh disk layer of size bytes on dir, its root
// owned by uid and gid with mode 0700.
func mountDiskLayer(dir string, size int64, uid, gid int) error {
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return &MissingError{Mechanism: "disk layers (mkfs.ext4, Debian's e2fsprogs)", Err: err}
	}
	img := filepath.Join(dir, layerImage)
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	defer f.Close()
	defer os.Remove(img) // the loop device holds it from here on
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	// No journal: the layer lives no longer than the host is up (a reboot
	// loses a tmpfs too). One inode per 8 KiB of space, four times ext4's
	// default: a tree of small files runs out of space before inodes. 4 KiB
	// blocks, as the loop device's (ext4 refuses a block smaller than its device's).
	out, err := exec.Command(mkfs, "-q", "-F", "-O", "^has_journal", "-m", "0", "-b", "4096", "-i", "8192",
		"-E", "lazy_itable_init=1,nodiscard,root_owner="+strconv.Itoa(uid)+":"+strconv.Itoa(gid), img).CombinedOutput()
	if err != nil {
		return fmt.Errorf("disk layer: mkfs.ext4: %w: %s", err, out)
	}
	loop, err := attachLoop(f)
	if err != nil {
		return &MissingError{Mechanism: "loop devices for disk layers", Err: err}
	}
	defer loop.Close() // once mounted: the mount keeps the device
	if err := unix.Mount(loop.Name(), dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, ""); err != nil {
		return fmt.Errorf("disk layer: mount: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, "lost+found")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("disk layer: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("disk layer: %w", err)
	}
	return nil
}

// attachLoop binds f to a free loop device, returned open: the device clears
// itself at its last close once nothing has it mounted.
func attachLoop(f *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(f.Fd()), Size: 4096,
		Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO}}
	// Another process may take the free device between the two calls.
	for range 16 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("LOOP_CONFIGURE: %w", err)
		}
	}
	return nil, errors.New("no free loop device after 16 tries")
}

// Eviction is what Evict released: the sandbox's cgroup's memory charge
// before and after.
type Eviction struct {
	Before, After int64
}

// Evict takes a paused sandbox's disk layers out of RAM: it writes back what
// its processes wrote to them and has the kernel reclaim what it can of the
// sandbox's memory (Cgroup.Reclaim): the layers' page cache, and that of the
// files its processes read. Nothing else is touched: the processes stay
// frozen with their files open, and a page they use after Resume is read back
// from disk, charged to the sandbox again. Their anonymous memory, /tmp and
// /dev/shm (tmpfs) stay in RAM: a sandbox never swaps (Config.Memory). A
// sandbox without DiskLayers, or not paused, is refused (ErrUnsupported): a
// tmpfs's pages have nowhere to go but swap.
func (s *Sandbox) Evict() (Eviction, error) {
	if !s.cfg.DiskLayers || s.state == "" {
		return Eviction{}, fmt.Errorf("%w: evict: the sandbox's upper layers are tmpfs, in RAM: only disk layers (Config.DiskLayers) can leave it", ErrUnsupported)
	}
	if !s.cg.Paused() {
		return Eviction{}, fmt.Errorf("%w: evict: the sandbox is not paused", ErrUnsupported)
	}
	var ev Eviction
	var err error
	if ev.Before, err = s.cg.MemoryUsage(); err != nil {
		return ev, fmt.Errorf("sandbox evict: %w", err)
	}
	dirs := []string{s.state}
	if s.cfg.Image != nil {
		dirs = append(dirs, filepath.Join(s.state, "root"))
	}
	for _, d := range dirs {
		if err := syncFS(d); err != nil {
			return ev, fmt.Errorf("sandbox evict: %w", err)
		}
	}
	if err := s.cg.Reclaim(); err != nil {
		return ev, fmt.Errorf("sandbox evict: %w", err)
	}
	if ev.After, err = s.cg.MemoryUsage(); err != nil {
		return ev, fmt.Errorf("sandbox evict: %w", err)
	}
	return ev, nil
}

// syncFS writes back the file system dir is on (syncfs(2)).
func syncFS(dir string) error {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
