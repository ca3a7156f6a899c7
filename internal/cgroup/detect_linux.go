package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Detect reports the host's cgroup mode, mounts and controllers, and whether New
// can create groups under DefaultParent. It creates nothing.
func Detect() Info {
	l, err := readLayout()
	if err != nil {
		return Info{Parent: DefaultParent, Reason: err.Error()}
	}
	return detect(l, DefaultParent)
}

func readLayout() (layout, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return layout{}, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	mounts, err := parseMountinfo(f)
	if err != nil {
		return layout{}, fmt.Errorf("cgroup: %w", err)
	}
	return layoutOf(mounts), nil
}

func detect(l layout, parent string) Info {
	info := Info{Mode: l.mode, Version: l.version(), Unified: l.unified, Parent: parent}
	switch info.Version {
	case 1:
		for _, name := range controllers {
			info.Controllers = append(info.Controllers, detectV1(l.v1[name], name, parent))
		}
	case 2:
		info.Controllers = detectV2(l.unified, parent)
	default:
		info.Reason = "no cgroup filesystem carrying memory, pids, cpu, cpuacct or freezer is mounted"
		return info
	}
	kill, _ := info.Controller(Freezer)
	info.CanCreate = kill.Usable
	if !kill.Usable {
		info.Reason = fmt.Sprintf("cannot empty a group on cgroup v%d: %s", info.Version, kill.Reason)
	}
	return info
}

func detectV1(mount, name, parent string) ControllerInfo {
	c := ControllerInfo{Name: name, Mount: mount}
	if mount == "" {
		c.Reason = "no v1 hierarchy carries it"
		return c
	}
	c.Available = true
	base := nearest(mount, parent)
	if err := writable(base); err != nil {
		c.Reason = fmt.Sprintf("%s is not writable: %v", base, err)
		return c
	}
	c.Usable = true
	return c
}

func detectV2(root, parent string) []ControllerInfo {
	base := nearest(root, parent)
	werr := writable(base)
	offered := fields(filepath.Join(root, "cgroup.controllers"))
	enabled := fields(filepath.Join(base, "cgroup.controllers"))
	var out []ControllerInfo
	for _, name := range controllers {
		c := ControllerInfo{Name: name, Mount: root}
		switch name {
		case CPUAcct:
			c.Available = true
			c.Reason = "built into v2 as cpu.stat"
		case Freezer:
			c.Available = kernelAtLeast(5, 14)
			c.Reason = "built into v2 as cgroup.kill"
			if !c.Available {
				c.Reason = "cgroup.kill needs Linux 5.14 or later"
			}
		default:
			c.Available = slices.Contains(offered, name)
			if !c.Available {
				c.Reason = fmt.Sprintf("not in %s/cgroup.controllers", root)
			}
		}
		switch {
		case !c.Available:
		case werr != nil:
			c.Reason = fmt.Sprintf("%s is not writable: %v", base, werr)
		case name == Memory || name == Pids || name == CPU:
			// Root can enable a controller down from the hierarchy root; a delegated
			// subtree must already have it.
			c.Usable = slices.Contains(enabled, name) || os.Geteuid() == 0
			if !c.Usable {
				c.Reason = fmt.Sprintf("not enabled for %s and not root to enable it", base)
			}
		default:
			c.Usable = true
		}
		out = append(out, c)
	}
	return out
}

// nearest returns the deepest existing directory on the way from a hierarchy root
// to parent below it: where New would start creating directories.
func nearest(root, parent string) string {
	best := root
	dir := root
	for _, comp := range strings.Split(parent, "/") {
		dir = filepath.Join(dir, comp)
		if !exists(dir) {
			break
		}
		best = dir
	}
	return best
}

func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return releaseAtLeast(unix.ByteSliceToString(u.Release[:]), major, minor)
}
