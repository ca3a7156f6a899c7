package cgroup

// Mode is how the host mounts cgroups.
type Mode int

const (
	ModeNone   Mode = iota // no cgroup filesystem with a usable controller
	ModeV1                 // legacy: v1 hierarchies only
	ModeHybrid             // v1 hierarchies plus a cgroup2 mount (systemd "hybrid")
	ModeV2                 // unified: cgroup2 only
)

func (m Mode) String() string {
	switch m {
	case ModeV1:
		return "v1"
	case ModeHybrid:
		return "hybrid"
	case ModeV2:
		return "v2"
	}
	return "none"
}

// Info describes the host's cgroups as agentbox would use them.
type Info struct {
	Mode Mode
	// Version is 1 or 2, the kind of hierarchy New places runs in (1 on hybrid
	// hosts, whose cgroup2 mount has no controllers we use); 0 when none.
	Version int
	// Unified is the cgroup2 mount point, if any.
	Unified string
	// Parent is the directory below each hierarchy root that holds the groups.
	Parent string
	// Controllers lists memory, pids, cpu, cpuacct and freezer in that order. On
	// v2, cpuacct stands for cpu.stat and freezer for cgroup.kill, both built in.
	Controllers []ControllerInfo
	// CanCreate reports whether New can create a group that Kill can empty: the
	// parent is writable (root, or a delegated v2 subtree) and the kill mechanism
	// (v1 freezer, v2 cgroup.kill) is there. Reason says why not.
	CanCreate bool
	Reason    string
}

// ControllerInfo is one controller on the host.
type ControllerInfo struct {
	Name      string
	Mount     string // root of its hierarchy ("" when not mounted)
	Available bool   // the kernel offers it in a mounted hierarchy
	Usable    bool   // available, and a group under the parent can use it
	Reason    string // why not usable, or a note
}

// Controller returns the entry for name.
func (i Info) Controller(name string) (ControllerInfo, bool) {
	for _, c := range i.Controllers {
		if c.Name == name {
			return c, true
		}
	}
	return ControllerInfo{}, false
}

// Usable reports whether every named controller is usable.
func (i Info) Usable(names ...string) bool {
	for _, n := range names {
		if c, ok := i.Controller(n); !ok || !c.Usable {
			return false
		}
	}
	return true
}
