package nsinit

import (
	"os"

	"golang.org/x/sys/unix"
)

// procMasked are /proc files hidden behind /dev/null and procMaskedDirs directories
// hidden behind an empty read-only tmpfs: kernel memory, the keyring list, timer and
// scheduler internals that leak host activity, and hardware trees (runc's list).
var (
	procMasked     = []string{"kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug"}
	procMaskedDirs = []string{"acpi", "asound", "scsi", "firmware"}
	// procReadOnly stay visible but read-only: sysctls, buses, file system and IRQ
	// settings, and the magic SysRq trigger.
	procReadOnly = []string{"sys", "bus", "fs", "irq", "sysrq-trigger"}
)

// mountProc mounts a fresh /proc for the sandbox's pid namespace (it shows only the
// sandbox's processes) and applies the masks.
func mountProc() error {
	proc := base + "/proc"
	if err := os.MkdirAll(proc, 0o755); err != nil {
		return at("mkdir /proc", err)
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return at("mount /proc", err)
	}
	for _, name := range procMasked {
		p := proc + "/" + name
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(base+"/dev/null", p, "", unix.MS_BIND, ""); err != nil {
			return atf(err, "mask /proc/%s", name)
		}
	}
	for _, name := range procMaskedDirs {
		p := proc + "/" + name
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		flags := uintptr(unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("tmpfs", p, "tmpfs", flags, "size=4k,mode=0555"); err != nil {
			return atf(err, "mask /proc/%s", name)
		}
	}
	for _, name := range procReadOnly {
		p := proc + "/" + name
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return atf(err, "bind /proc/%s", name)
		}
		if err := setattr(p, roAttrs|unix.MOUNT_ATTR_NOEXEC, true); err != nil {
			return atf(err, "make /proc/%s read-only", name)
		}
	}
	return nil
}
