package nsinit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/net/bpf"

	"github.com/agentbox/agentbox/internal/landlock"
)

// Argv0 values under which the agentbox binary runs as one of this package's helpers.
const (
	// Argv0Init runs the sandbox init.
	Argv0Init = "agentbox-init"
	// Argv0Hold blocks until its stdin closes. Probe starts it in new namespaces
	// to see whether they can be made; the holder of an idmapped mount's user
	// namespace carries the name but never runs (it stays stopped at its execve).
	Argv0Hold = "agentbox-nshold"
	// Argv0ProbeOverlay tries to mount an overlay inside a user namespace; Probe uses it.
	Argv0ProbeOverlay = "agentbox-probe-overlay"
)

// StageBuild is the stage an init built from other sources than its host fails at
// (see BuildKey).
const StageBuild = "init build"

// File descriptors the host passes to the init (os/exec ExtraFiles start at 3).
const (
	// FDControl is read by the init: first the length-prefixed Spec, then control
	// bytes (CtlTerminate). EOF means the host is gone: the init kills everything.
	FDControl = 3
	// FDStatus is written by the init: one JSON Message per line.
	FDStatus = 4
	// FDServe is the init's end of a SOCK_SEQPACKET socket pair, passed only to a
	// persistent init (Spec.Persistent): Requests in, Replies out (see serve.go).
	FDServe = 5
)

// CtlTerminate asks the init to send SIGTERM to every process of the sandbox.
const CtlTerminate = 'T'

// maxSpec bounds the Spec the init accepts, so a broken host cannot make it allocate
// without limit.
const maxSpec = 1 << 20

// Spec is everything the init needs. The host sends it as one JSON document.
type Spec struct {
	// Persistent makes the init serve exec Requests on FDServe instead of running
	// one command; Argv, Env, Dir and Rlimits are then empty (each Request has
	// its own).
	Persistent bool `json:"persistent,omitempty"`
	// Argv is the command. Argv[0] without a slash is looked up in PATH from Env.
	Argv []string `json:"argv"`
	// Env is the command's whole environment (nothing is inherited).
	Env []string `json:"env"`
	// Dir is the command's working directory inside the sandbox.
	Dir string `json:"dir"`
	// RootFS is where /usr, /bin, /lib… and the host files of /etc come from. An
	// empty Source means the host's own root.
	RootFS Source `json:"rootfs"`
	// Image, when set, is the root file system: an overlay of an image's layers
	// in place of RootFS and the host's system directories (see Image).
	Image *Image `json:"image,omitempty"`
	// Workspace is what appears at /workspace.
	Workspace Workspace `json:"workspace"`
	// Mounts are host directories shown elsewhere, mounted after the workspace.
	Mounts []Mount `json:"mounts,omitempty"`
	// TmpSize and ShmSize are the sizes in bytes of /tmp and /dev/shm.
	TmpSize int64 `json:"tmp_size"`
	ShmSize int64 `json:"shm_size"`
	// Rlimits are set on the init just before it starts the command, so they hold
	// from the command's first instruction.
	Rlimits []Rlimit `json:"rlimits"`
	// Landlock is the ruleset the init restricts itself and the command with.
	Landlock landlock.Ruleset `json:"landlock"`
	// Seccomp is the filter program the init installs last. Empty is an error: the
	// init never runs a command without one.
	Seccomp Program `json:"seccomp"`
	// Network, when set, is the sandbox's way out: the egress proxy's listener,
	// which the init opens and hands to the host (see Network). Nil: loopback only.
	Network *Network `json:"network,omitempty"`
	// Build, when set, is the host's BuildKey: an init whose own differs refuses
	// the Spec (stage StageBuild) before it does anything.
	Build string `json:"build,omitempty"`
}

// Program is a seccomp filter program. In a Spec it is the kernel's sock_filter
// array (8 bytes an instruction) in base64: an array of JSON objects took the init
// 0.3 ms of every start to decode (issue 16).
type Program []bpf.RawInstruction

// MarshalJSON encodes p as base64 of its sock_filter array.
func (p Program) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(p))
	for _, in := range p {
		b = binary.LittleEndian.AppendUint16(b, in.Op)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return json.Marshal(b)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (p *Program) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("seccomp program: %w", err)
	}
	if len(b)%8 != 0 {
		return fmt.Errorf("seccomp program: %d bytes is not a whole number of 8-byte instructions", len(b))
	}
	out := make(Program, len(b)/8)
	for i := range out {
		in := b[8*i:]
		out[i] = bpf.RawInstruction{Op: binary.LittleEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.LittleEndian.Uint32(in[4:])}
	}
	*p = out
	return nil
}

// Source names a host directory for the init: either a detached mount passed as an
// open file descriptor (FD >= 3, made with open_tree by the host) or a path the init
// can reach itself (FD < 3).
type Source struct {
	Path string `json:"path,omitempty"`
	FD   int    `json:"fd,omitempty"`
}

// IsZero reports whether s names nothing.
func (s Source) IsZero() bool { return s.Path == "" && s.FD < 3 }

// Image is a root file system made of read-only layers and a private upper layer.
// The init mounts one overlay ("lowerdir+" per layer, "userxattr") as the new root
// and mounts its own /etc files, /dev, /proc, /tmp and /workspace on top; the
// root stays writable (writes land in the upper layer), and Landlock lets the
// commands write the image's top-level directories.
type Image struct {
	// Layers is the tree that holds every layer: a detached, read-only mount the
	// host made (idmapped so that the image's user is the sandbox user).
	Layers Source `json:"layers"`
	// Lowers are the layers, top first, as paths relative to Layers.
	Lowers []string `json:"lowers"`
	// Sealed are read-only layers above Lowers, top first: the sealed upper
	// layers of earlier sandboxes' roots (a snapshot), detached mounts the
	// host made.
	Sealed []Source `json:"sealed,omitempty"`
	// State holds the overlay's upper and work directories, named by Upper and
	// Work (relative paths), empty and on one file system.
	State Source `json:"state"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
	// Host puts the host's system directories at the bottom of the root (an
	// image built on `base: host`): a skeleton lower layer below the image's
	// holds each of HostDirs (a symlink recreated, a directory to mount on) and
	// a mount point for each of HostEtc; each real directory no layer hides is
	// an overlay of its own, mounted on the root's, whose lowers are the
	// layers' copies of it over the host's; each entry of HostEtc no layer has
	// is the host's, bound read-only. Lowers may then be empty.
	Host     bool      `json:"host,omitempty"`
	HostDirs []HostDir `json:"host_dirs,omitempty"`
	HostEtc  []string  `json:"host_etc,omitempty"`
	// Build runs the commands as root of the sandbox's user namespace, which maps
	// a whole range of ids, with the capabilities of BuildCaps, and keeps the
	// image's own users and groups (a build step installs packages); otherwise
	// the commands are the sandbox user and /etc/passwd and /etc/group are the
	// generated ones.
	Build bool `json:"build,omitempty"`
}

// HostDir is one system directory of the host under an image root (Image.Host).
type HostDir struct {
	// Name is the directory's name in / ("usr").
	Name string `json:"name"`
	// Link is the host's symlink target ("usr/bin"), recreated as it is.
	Link string `json:"link,omitempty"`
	// Otherwise Tree is the host directory as a detached, read-only, nosuid,
	// nodev mount (idmapped as the image's layers are), the bottom lower layer
	// of its overlay, whose upper directory is Image.Upper/Name and whose work
	// directory is Work, both in Image.State and made by the host.
	Tree Source `json:"tree,omitzero"`
	Work string `json:"work,omitempty"`
}

// WorkspaceMode says how /workspace is built.
type WorkspaceMode string

// Workspace modes.
const (
	// WorkspaceTmpfs is an empty size-limited tmpfs (no host workspace).
	WorkspaceTmpfs WorkspaceMode = "tmpfs"
	// WorkspaceOverlay is an overlay: the host workspace read-only below, a private
	// upper layer on the host above.
	WorkspaceOverlay WorkspaceMode = "overlay"
	// WorkspaceBind is a read-write bind of the host workspace.
	WorkspaceBind WorkspaceMode = "bind"
)

// Workspace describes /workspace.
type Workspace struct {
	Mode WorkspaceMode `json:"mode"`
	// Lower is the host workspace (overlay lower layer or bind source).
	Lower Source `json:"lower"`
	// Layers are read-only layers between the upper layer and Lower, top first
	// (overlay only): sealed upper layers of earlier sandboxes (a snapshot),
	// detached read-only mounts the host made.
	Layers []Source `json:"layers,omitempty"`
	// State is a private host directory holding "upper" and "work" (overlay only).
	State Source `json:"state"`
	// Size is the tmpfs size in bytes (tmpfs only).
	Size int64 `json:"size,omitempty"`
	// ReadOnly are paths relative to the workspace, with no symlink but the last
	// component, that the init binds read-only over themselves (bind only): the
	// repository's .git, whose hooks and config the host's git would run.
	ReadOnly []string `json:"read_only,omitempty"`
}

// Mount is a host directory shown at Target (an absolute path the host checked).
// Mode "ro" is read-only, "rw" read-write, "cow" an overlay of Source under a
// private tmpfs of Size bytes.
type Mount struct {
	Source Source `json:"source"`
	Target string `json:"target"`
	Mode   string `json:"mode"`
	Size   int64  `json:"size,omitempty"`
}

// Rlimit is one resource limit (Resource is a unix.RLIMIT_* number).
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// Message kinds on the status pipe.
const (
	// KindError: setup failed at Stage; the command never ran (or, for stage
	// "exec", could not be started).
	KindError = "error"
	// KindExit: the command exited; everything else was killed and reaped.
	KindExit = "exit"
)

// Message is one line on the status pipe.
type Message struct {
	Kind string `json:"kind"`

	// Error fields.
	Stage  string `json:"stage,omitempty"`
	Errno  int    `json:"errno,omitempty"`
	Detail string `json:"detail,omitempty"`

	// Exit fields: the command's raw wait status and the resource usage of every
	// process the init reaped (the command tree; the init itself excluded).
	WaitStatus uint32 `json:"wait_status,omitempty"`
	Rusage     Rusage `json:"rusage"`

	// Landlock is what Restrict enforced (landlock.Applied.String()).
	Landlock string `json:"landlock,omitempty"`

	// Both kinds: what the init saw when it started, and when each setup phase ended
	// (CLOCK_MONOTONIC, which host and init share: there is no time namespace).
	InitUID    int     `json:"init_uid"`
	InitCapEff uint64  `json:"init_cap_eff"`
	Stamps     []Stamp `json:"stamps,omitempty"`
}

// Rusage is the accumulated usage of the reaped processes.
type Rusage struct {
	UserNS   int64 `json:"user_ns"`
	SysNS    int64 `json:"sys_ns"`
	MaxRSSKB int64 `json:"maxrss_kb"`
}

// Stamp marks the end of a phase at a CLOCK_MONOTONIC time in nanoseconds.
type Stamp struct {
	Phase  string `json:"phase"`
	MonoNS int64  `json:"mono_ns"`
}

// WriteSpec writes s to w as a 4-byte big-endian length and a JSON document.
func WriteSpec(w io.Writer, s *Spec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode spec: %w", err)
	}
	if len(b) > maxSpec {
		return fmt.Errorf("encode spec: %d bytes exceeds %d", len(b), maxSpec)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write spec: %w", err)
	}
	return nil
}

// ReadSpec reads what WriteSpec wrote, and nothing more.
func ReadSpec(r io.Reader) (*Spec, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read spec length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxSpec {
		return nil, fmt.Errorf("read spec: length %d exceeds %d", n, maxSpec)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	}
	switch {
	case s.Persistent && len(s.Argv) > 0:
		return nil, errors.New("decode spec: a persistent init takes no argv")
	case !s.Persistent && (len(s.Argv) == 0 || s.Argv[0] == ""):
		return nil, errors.New("decode spec: empty argv")
	}
	return &s, nil
}
