package sandbox

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// Defaults filled in by Start for zero fields.
const (
	DefaultDir           = "/workspace"
	DefaultTmpSize       = 256 << 20
	DefaultShmSize       = 64 << 20
	DefaultWorkspaceSize = 1 << 30
	DefaultRootSize      = 1 << 30
	// DefaultPids bounds the tasks (processes and threads, the init's included)
	// of a sandbox. The memory default is DefaultMemory.
	DefaultPids = 1024
	// MaxDefaultMemory caps DefaultMemory.
	MaxDefaultMemory = 4 << 30
)

// Unlimited, as Config.Memory or Config.Pids, asks for no limit of that kind.
const Unlimited = -1

// Config describes one sandbox. The zero value (plus Argv) runs a command with no host
// workspace, default tmpfs sizes, the default memory and pids limits, no CPU quota
// and the inherited rlimits (core dumps always off).
type Config struct {
	// Persistent starts a sandbox that runs no command of its own but serves
	// Exec until it is destroyed; Argv, Env and Dir must then be empty (each
	// ExecConfig has its own), and Rlimits are the ceiling of every command.
	Persistent bool

	// Argv is the command; Argv[0] without a slash is looked up in PATH from Env.
	Argv []string
	// Env is the command's whole environment; nothing is inherited from the host.
	// Nil with an Image: the image's (Image.Config.Env).
	Env []string
	// Dir is the working directory inside the sandbox: when empty, the Image's
	// working directory if it names one, else DefaultDir.
	Dir string

	// Workspace is the host directory shown at /workspace. By default it is the
	// read-only lower layer of an overlay whose private upper layer (UpperDir) takes
	// every write; with WorkspaceWrite it is bound read-write and writes reach the
	// host, except under /workspace/.git, which stays read-only. Empty: /workspace is
	// an empty tmpfs of WorkspaceSize.
	Workspace      string
	WorkspaceWrite bool
	// Layers are read-only layers between the upper layer and Workspace, top
	// first: the sealed upper layers of earlier sandboxes (Seal), which this
	// one continues from. Only with an overlay Workspace; needs root (each is
	// mounted idmapped). The caller keeps them open until Start has returned.
	Layers []*Layer
	// WorkspaceSize bounds what the sandbox can write to /workspace, in bytes, unless
	// WorkspaceWrite: the upper layer (as root; see UpperDir) or the empty
	// workspace is a tmpfs of this size, charged to the memory cgroup.
	WorkspaceSize int64

	// DiskLayers puts the upper layers (the workspace's and an image root's) on
	// the host's disk instead of tmpfs: each an ext4 file system of its size
	// in a sparse file on a loop device (needs root and mkfs.ext4). Their pages
	// are then page cache, charged to the memory cgroup while in RAM but
	// written back and reclaimable, so that Evict can take them out of it.
	DiskLayers bool

	// RootFS, if set, is a host directory whose usr, bin, lib… and etc entries are
	// used instead of the host's own.
	RootFS string

	// Image, if set, is the sandbox's root file system in place of the host's
	// system directories (and RootFS): its layers, read-only and shared, below a
	// private upper layer that takes every write to the root and goes with the
	// sandbox (a tmpfs of RootSize of its own in the state directory, charged to
	// the memory cgroup as the workspace's is). The generated /etc files, /dev, /proc, /tmp and /workspace
	// are mounted over it as without one. The caller opens it (image.Store.Open)
	// and keeps it open until Destroy has returned. Needs agentbox to run as root.
	Image *image.Image
	// RootSize bounds what the sandbox can write to an image root (its private
	// upper layer), in bytes; zero: DefaultRootSize. The workspace's writes
	// count against WorkspaceSize, not this.
	RootSize int64

	// build, set by BuildRunner only, makes a build sandbox (see buildRoot).
	build *buildRoot

	// Mounts are host directories shown at paths outside /workspace (see Mount).
	Mounts []Mount

	// TmpSize and ShmSize are the sizes of /tmp and /dev/shm in bytes.
	TmpSize int64
	ShmSize int64

	// Cgroup limits: memory in bytes (swap off), number of tasks, CPUs (fractional
	// quota). Zero Memory and Pids take DefaultMemory() and DefaultPids, Unlimited
	// asks for none; zero CPUs is no quota. The cgroup exists regardless.
	Memory int64
	Pids   int64
	CPUs   float64

	// Rlimits apply to the command from its first instruction.
	Rlimits Rlimits

	// Network, when set, gives the sandbox its one way out: an egress proxy on the
	// host. Nil: no network at all but the sandbox's own loopback.
	Network *Network

	// Keep, if set, is the absolute path of the file where the caller records
	// the sandbox's Leftover: what an overlay sandbox holds on the host's disk
	// (its state directory, with the upper layers, and its host id reservation)
	// is kept when agentbox dies without Destroy, and ReapStale leaves it for a
	// later Start From it, or Discard, for as long as that file exists. Destroy
	// removes it as always.
	Keep string
	// From, if set, is the Leftover of a kept sandbox whose agentbox died: this
	// sandbox takes over its upper layers (the workspace's and the root's, with
	// every file written to them) and its host ids instead of starting empty. The
	// rest of the configuration must be the one it was started with.
	From *Leftover
}

// Leftover names what a kept sandbox (Config.Keep) leaves on the host when its
// agentbox dies: its state directory and its host uid. It is data a caller
// stores, so Start checks it as untrusted input (see Config.From).
type Leftover struct {
	State string `json:"state"`
	UID   int    `json:"uid"`
	// Init and InitStart are the init's host pid and its start time (field 22
	// of /proc/PID/stat): an init that outlived its agentbox (a paused one,
	// frozen before its parent-death signal could act) is killed by a Start From
	// the leftover, through a pidfd, once it is known to be that init.
	Init      int    `json:"init_pid,omitempty"`
	InitStart uint64 `json:"init_start,omitempty"`
}

// LeftoverError says why a Leftover was refused: it names no kept sandbox of a
// dead agentbox (a forged or stale record, or one whose sandbox still runs).
type LeftoverError struct {
	Leftover Leftover
	Reason   string
}

func (e *LeftoverError) Error() string {
	return fmt.Sprintf("sandbox: leftover %s (uid %d) refused: %s", e.Leftover.State, e.Leftover.UID, e.Reason)
}

// DefaultProxyPort is Network.Port when it is zero.
const DefaultProxyPort = 3128

// Network is a sandbox's egress. The sandbox's init listens on 127.0.0.1:Port in the
// sandbox's network namespace, which keeps no other interface than lo, and hands
// the listener to the host before it confines itself; Proxy serves it there, so
// every connection to that port is the proxy's to decide and nothing in the
// sandbox forwards a byte. Every command gets the proxy variables (egress.ProxyEnv)
// and a trust store holding Proxy's CA (nsinit.TrustBundle, named by the variables
// TLS clients read: NetworkEnv). Destroy closes the listener; closing Proxy is the
// caller's, after Destroy (its log is complete then).
type Network struct {
	Proxy *egress.Proxy
	Port  uint16
	// Trust are PEM certificates the sandbox trusts besides the proxy's CA and
	// its root's bundle, for the TLS it speaks end to end through the proxy's
	// tunnels: a site's TLS interceptor's CA (BuildRunner.Trust).
	Trust []byte
}

// trustVars name the CA bundle for the TLS clients that do not read the system's:
// OpenSSL and Go (SSL_CERT_FILE), curl, git, Python requests, pip, Node.js and npm.
var trustVars = []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS"}

// NetworkEnv returns env with the variables of a sandbox with egress on port: the
// proxy variables and the trust store's. They replace any entry of env with the
// same name (a duplicate would be read first by some programs, last by others).
func NetworkEnv(env []string, port uint16) []string {
	if port == 0 {
		port = DefaultProxyPort
	}
	add := egress.ProxyEnv(fmt.Sprintf("127.0.0.1:%d", port))
	for _, v := range trustVars {
		add = append(add, v+"="+nsinit.TrustBundle)
	}
	names := map[string]bool{}
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// Mount shows a host directory inside the sandbox. Start checks it (CheckMount)
// and opens the source without following any symlink; as root the directory
// reaches the sandbox as a detached mount tree, like the workspace, so the sandbox
// never resolves a host path.
type Mount struct {
	// Source is an absolute host directory; no component of it may be a symlink.
	Source string
	// Target is where it appears: absolute and clean, outside /workspace, /tmp,
	// /proc, /dev, /sys, /etc and the system directories, and not above any of them.
	Target string
	// Mode: MountReadOnly (when empty), MountReadWrite or MountCopyOnWrite.
	Mode MountMode
	// Size bounds what a copy-on-write mount's private layer holds, in bytes
	// (default WorkspaceSize); it is a tmpfs charged to the memory cgroup.
	Size int64
}

// MountMode says what the sandbox may do to a mounted directory.
type MountMode string

const (
	// MountReadOnly: read-only, nosuid, nodev; writes fail with EROFS.
	MountReadOnly MountMode = "ro"
	// MountReadWrite: writes reach the host directory. As root the mount is
	// idmapped so that the directory's owner appears as the sandbox user, and the
	// sandbox writes as that owner, as with --write.
	MountReadWrite MountMode = "rw"
	// MountCopyOnWrite: the host directory is the lower layer of an overlay whose
	// upper layer is a private tmpfs: the sandbox reads and writes it, and nothing
	// it writes outlives it or reaches the host.
	MountCopyOnWrite MountMode = "cow"
)

// Rlimits are the command's resource limits. A zero Rlimit leaves the limit as the
// init inherited it. RLIMIT_CORE is always 0.
type Rlimits struct {
	CPU    Rlimit // seconds of CPU time: SIGXCPU at Soft, SIGKILL at Hard
	FSize  Rlimit // bytes per file written
	NoFile Rlimit // open file descriptors
	NProc  Rlimit // processes and threads of the sandbox user, the init's included
	AS     Rlimit // bytes of address space per process
}

// Rlimit is a soft and a hard limit. A zero Hard means Hard = Soft.
type Rlimit struct {
	Soft, Hard uint64
}

// Stdio are the command's standard streams. A nil file means /dev/null.
type Stdio struct {
	Stdin, Stdout, Stderr *os.File
}

// ExecConfig is one command of a persistent sandbox.
type ExecConfig struct {
	// Argv is the command; Argv[0] without a slash is looked up in PATH from Env.
	Argv []string
	// Env is the command's whole environment; nothing is inherited. Nil with
	// an Image: the image's.
	Env []string
	// Dir is the working directory inside the sandbox: when empty, the
	// sandbox Image's working directory if it names one, else DefaultDir.
	Dir string
	// Rlimits apply to the command from microseconds after its execve (see
	// Sandbox.Exec); RLIMIT_CORE is always 0. A hard limit above the sandbox's own
	// fails the Exec.
	Rlimits Rlimits
	// TTY, when set, runs the command on a pty of the sandbox's own devpts of this
	// size instead of the Stdio: see Process.Terminal.
	TTY *Winsize
}

// Winsize is a terminal's size in characters.
type Winsize struct{ Rows, Cols uint16 }
