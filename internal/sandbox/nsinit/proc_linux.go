package nsinit

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// What of the fresh /proc the sandbox may not see of the host. runc's masked paths
// are the floor (kcore, keys, latency_stats, timer_list, timer_stats, sched_debug,
// acpi, asound, scsi; Docker adds interrupts); the rest tells the host's identity,
// hardware, disks and activity. /sys is not mounted at all, so runc's /sys/firmware
// and /sys/devices/virtual/powercap masks have nothing to cover.
var (
	// procMasked are files hidden behind /dev/null: kernel memory and symbols, the
	// keyrings and their per-uid counts, timer and scheduler internals, the host's
	// kernel command line and configuration, its disks, swap, interrupt and memory
	// zone counters, and its hardware maps.
	procMasked = []string{"kcore", "keys", "key-users", "latency_stats", "timer_list", "timer_stats",
		"sched_debug", "schedstat", "cmdline", "config.gz", "bootconfig", "kallsyms", "modules",
		"diskstats", "partitions", "mdstat", "swaps", "interrupts", "softirqs", "zoneinfo", "buddyinfo",
		"pagetypeinfo", "slabinfo", "vmallocinfo", "iomem", "ioports", "mtrr",
		"kpagecount", "kpageflags", "kpagecgroup"}
	// procMaskedDirs are directories hidden behind an empty read-only tmpfs: ACPI,
	// sound and SCSI hardware, per-IRQ settings and counters, and the host-wide
	// pressure stall figures (whose files are writable by anyone: a trigger there is
	// kernel work on the host's behalf).
	procMaskedDirs = []string{"acpi", "asound", "scsi", "irq", "pressure"}
	// procReadOnly stay visible but read-only: sysctls, buses, file system settings,
	// and the magic SysRq trigger.
	procReadOnly = []string{"sys", "bus", "fs", "sysrq-trigger"}
)

// mountProc mounts a fresh /proc for the sandbox's pid namespace (it shows only the
// sandbox's processes) and applies the masks. /proc/stat and the boot id are
// replaced with the sandbox's own (see procStat); /proc/uptime, btime and the
// processes' start times come from the sandbox's time namespace (newTimeNamespace).
func mountProc(btime int64) error {
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
	stat, err := procStat(proc+"/stat", btime)
	if err != nil {
		return at("read /proc/stat", err)
	}
	for _, f := range []struct {
		name    string
		content []byte
	}{{"stat", stat}, {"sys/kernel/random/boot_id", bootID()}} {
		if _, err := os.Lstat(proc + "/" + f.name); err != nil {
			continue
		}
		if err := bindContent(f.content, proc+"/"+f.name); err != nil {
			return atf(err, "replace /proc/%s", f.name)
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

// procStat generates the sandbox's /proc/stat from the host's at path: a line per
// CPU, as the host has them (programs count them: glibc's get_nprocs without /sys,
// Node's os.cpus()), every counter zero instead of the host's, and btime the
// sandbox's boot. The host's counters (CPU time, interrupts, context switches,
// forks) tell what else the host runs.
func procStat(path string, btime int64) ([]byte, error) {
	host, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(host))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && strings.HasPrefix(f[0], "cpu") {
			sep := " "
			if f[0] == "cpu" {
				sep = "  "
			}
			b.WriteString(f[0] + sep + strings.TrimSpace(strings.Repeat("0 ", len(f)-1)) + "\n")
		}
	}
	fmt.Fprintf(&b, "intr 0\nctxt 0\nbtime %d\nprocesses 0\nprocs_running 0\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n", btime)
	return b.Bytes(), sc.Err()
}

// bootID is a random boot id (a version 4 UUID) for the sandbox: the host's
// identifies the host and its boot.
func bootID() []byte {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read does not fail
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Appendf(nil, "%x-%x-%x-%x-%x\n", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// bindContent puts a read-only file holding content over dst. The file is made in
// the staging area, which is removed before the pivot: only the mount keeps it.
func bindContent(content []byte, dst string) error {
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(stage, "file-")
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o444)
	}
	if err == nil {
		err = unix.Mount(f.Name(), dst, "", unix.MS_BIND, "")
	}
	if err == nil {
		err = setattr(dst, roAttrs|unix.MOUNT_ATTR_NOEXEC, false)
	}
	return err
}
