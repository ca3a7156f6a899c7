package gvisor

import (
	"errors"
	"os"
	"syscall"

	"github.com/agentbox/agentbox/internal/cgroup"
)

// InstallCommand installs the runsc this package is tested with.
const InstallCommand = "CGO_ENABLED=0 GOBIN=/usr/local/bin go install gvisor.dev/gvisor/runsc@v0.0.0-20260905035102-160fafc42237"

// Stdio is the command's descriptors 0-2.
type Stdio struct{ Stdin, Stdout, Stderr *os.File }

// Exit is how the command ended.
type Exit struct {
	ExitCode int
	Signal   syscall.Signal // the signal that killed it, or 0
	// Err is set when runsc failed (no status of the command); its text is
	// runsc's own account from its log.
	Err error
}

// Stats is the sandbox's usage as its cgroup counts it: runsc, the Sentry (which
// runs the command) and the gofer.
type Stats = cgroup.Stats

// ErrUnsupported is returned where runsc cannot run: other systems, no runsc.
var ErrUnsupported = errors.New("gvisor isolation is unavailable")

// Workspace is where the workspace appears inside the sandbox.
const Workspace = "/workspace"

// Hostname is the sandbox's host name (the namespace level's too).
const Hostname = "agentbox"

// Config describes one sandboxed command.
type Config struct {
	// Runsc is the runsc binary; "runsc" in PATH when empty.
	Runsc string
	// Argv and Env are the command's; Dir is its working directory inside.
	Argv []string
	Env  []string
	Dir  string
	// Workspace is the host directory shown at /workspace copy-on-write; its
	// changes are in UpperDir after the run. Empty: an empty /workspace.
	Workspace string
	// UID and GID are the command's, inside gVisor and for the files it creates
	// in the workspace (the gofer gives them to the host). The command has no
	// capabilities: it can change what UID owns, as the namespace level's
	// sandbox user owns its (idmapped) workspace. Package runner passes the
	// workspace directory's owner.
	UID, GID uint32
	// Mounts are host directories shown outside /workspace (StartEnv only; the
	// caller checks their targets, as sandbox.CheckMount does).
	Mounts []Mount
	// WorkspaceSize bounds the workspace's changes (the overlay's upper layer,
	// a tmpfs) in bytes; zero: the disk of TMPDIR, where the state is.
	WorkspaceSize int64
	// TmpSize and ShmSize bound /tmp and /dev/shm in bytes.
	TmpSize, ShmSize int64
	// Memory bounds the whole sandbox (the Sentry's memory, which holds the
	// command's) in bytes; Pids the command's processes (RLIMIT_NPROC inside,
	// and the host tasks of the sandbox as a backstop); CPUs is a quota in
	// cores. Zero: no limit.
	Memory int64
	Pids   int64
	CPUs   float64
	// Rlimits are set on the command (CPU seconds, file size, open files).
	CPU      Rlimit
	FileSize uint64
	NoFile   uint64
}

// Mount shows the host directory Source at Target, read-only, or with
// CopyOnWrite as the lower layer of an overlay whose upper layer is on the
// workspace's (and bounded with it). Source is opened without following a
// symlink on the way, as the namespace level's mounts are.
type Mount struct {
	Source, Target string
	CopyOnWrite    bool
}

// Rlimit is a soft and hard limit.
type Rlimit struct{ Soft, Hard uint64 }
