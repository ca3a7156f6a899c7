package gvisor

import (
	"path"
	"strconv"
)

// The OCI runtime spec, as far as this package writes it (runtime-spec v1.0).
type ociSpec struct {
	Version  string     `json:"ociVersion"`
	Process  ociProcess `json:"process"`
	Root     ociRoot    `json:"root"`
	Hostname string     `json:"hostname"`
	Mounts   []ociMount `json:"mounts"`
	Linux    ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool       `json:"terminal"`
	User            ociUser    `json:"user"`
	Args            []string   `json:"args"`
	Env             []string   `json:"env"`
	Cwd             string     `json:"cwd"`
	Capabilities    ociCaps    `json:"capabilities"`
	Rlimits         []ociLimit `json:"rlimits"`
	NoNewPrivileges bool       `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

type ociCaps struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Permitted   []string `json:"permitted"`
	Inheritable []string `json:"inheritable"`
	Ambient     []string `json:"ambient"`
}

type ociLimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	Namespaces []ociNamespace `json:"namespaces"`
}

type ociNamespace struct {
	Type string `json:"type"`
}

// bind is a host path shown read-only or read-write at the same or another path.
type bind struct {
	source, target string
	write          bool
}

// spec is the bundle's config.json for cfg: root is the empty read-only root
// directory, binds the host paths to show (system directories, /etc and its
// mirrored entries, the workspace), in mount order.
func spec(cfg Config, root string, binds []bind) ociSpec {
	// No capabilities: nothing lifts RLIMIT_NPROC, no raw sockets, no ptrace of
	// other users, no mknod; no_new_privs makes set-ID binaries inert.
	caps := []string{}
	limits := []ociLimit{
		{"RLIMIT_CPU", cfg.CPU.Hard, cfg.CPU.Soft},
		{"RLIMIT_FSIZE", cfg.FileSize, cfg.FileSize},
		{"RLIMIT_NOFILE", cfg.NoFile, cfg.NoFile},
		{"RLIMIT_CORE", 0, 0},
	}
	if cfg.Pids > 0 {
		limits = append(limits, ociLimit{"RLIMIT_NPROC", uint64(cfg.Pids), uint64(cfg.Pids)})
	}
	mounts := []ociMount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"ro", "nosuid", "nodev", "noexec"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: tmpOptions(cfg.TmpSize)},
		// Without its own mount, gVisor's /dev/shm holds as much as the memory limit.
		{Destination: "/dev/shm", Type: "tmpfs", Source: "tmpfs", Options: tmpOptions(cfg.ShmSize)},
	}
	for _, b := range binds {
		opt := []string{"rbind", "ro", "nosuid", "nodev"}
		if b.write {
			opt[1] = "rw"
		}
		mounts = append(mounts, ociMount{Destination: b.target, Type: "bind", Source: b.source, Options: opt})
	}
	dir := cfg.Dir
	if dir == "" {
		dir = Workspace
	}
	return ociSpec{
		Version: "1.0.2",
		Process: ociProcess{
			User: ociUser{UID: cfg.UID, GID: cfg.GID},
			Args: cfg.Argv,
			Env:  cfg.Env,
			Cwd:  path.Clean(dir),
			Capabilities: ociCaps{Bounding: caps, Effective: caps, Permitted: caps,
				Inheritable: []string{}, Ambient: []string{}},
			Rlimits:         limits,
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: root, Readonly: true},
		Hostname: Hostname,
		Mounts:   mounts,
		Linux: ociLinux{Namespaces: []ociNamespace{
			{"pid"}, {"network"}, {"ipc"}, {"uts"}, {"mount"},
		}},
	}
}

func tmpOptions(size int64) []string {
	opt := []string{"nosuid", "nodev", "mode=1777"}
	if size > 0 {
		opt = append(opt, "size="+strconv.FormatInt(size, 10))
	}
	return opt
}
