// Package env manages environments: persistent sandboxes in which an agent works for
// minutes — runs commands, reads and writes files, applies patches, exports artifacts —
// until the environment is destroyed or expires. The server (package api), the MCP
// server, the agent's tools and the grader all use it; none of them touches a sandbox
// or a workspace directory directly.
//
// It does not authenticate anyone: every call carries an Owner that the caller (the
// API edge) has already established, and env only enforces that an environment or
// artifact is visible to its owner's tenant alone.
//
// Manager implements Service. Each environment is one persistent sandbox (package
// sandbox, Config.Persistent): a confined init that runs the environment's
// commands (runner.RunIn, so each has the runner's contract) and hands the host
// a descriptor of its /workspace, through which every file operation goes
// (workspace.Root, as the sandbox user). Diff reads the private upper layer while
// the environment is frozen; Snapshot seals that layer read-only, and the
// environment and its forks continue in new sandboxes above it; exported files and truncated command outputs go to a
// content-addressed artifact store with per-tenant owner records, bounded by age,
// by total size and by per-tenant quotas (Config.Artifact*).
//
// Environments live as long as the agentbox process: when it dies, their inits
// die with it, and with each init everything it ran. After a restart they are
// reaped, not recovered: NewManager's Recover removes what they left on the host
// (mounts, cgroups, uid reservations, state directories). Artifacts survive.
//
// It deliberately does not persist environment records, enforce per-tenant quotas
// on environments or scopes (package api does; the artifact quotas are the
// store's, the only place that can count them), or restrict by Owner.Task (it is
// recorded). An environment has no network unless CreateOptions.Network gives it
// one: then an egress proxy of its own (SetNetwork, NetworkLog); bounding what a
// tenant may allow is the API's.
package env

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Owner is who an environment or artifact belongs to.
type Owner struct {
	Tenant string `json:"tenant"`
	Task   string `json:"task,omitempty"`
}

// Limits bound an environment as a whole (its cgroup) and each command in it.
type Limits struct {
	Memory        int64   `json:"memory_bytes,omitempty"`
	Pids          int64   `json:"pids,omitempty"`
	CPUs          float64 `json:"cpus,omitempty"`
	WorkspaceSize int64   `json:"workspace_bytes,omitempty"`
}

// CreateOptions describe a new environment. Exactly one of Workspace and Preset is set.
type CreateOptions struct {
	Owner     Owner  `json:"owner"`
	Workspace string `json:"workspace,omitempty"` // host directory (read-only lower layer)
	Preset    string `json:"preset,omitempty"`    // name of a registered workspace preset
	// Template names the root file system, an image in Config.Images (empty:
	// the host's system directories). The workspace stays /workspace.
	Template string `json:"template,omitempty"`
	Limits   Limits `json:"limits"`
	// Isolation is the environment's level: runner.IsolationNamespace (the
	// default) or runner.IsolationGvisor, whose commands run under gVisor's
	// kernel (no Network, Mounts or Template there).
	Isolation runner.Isolation `json:"isolation,omitempty"`
	Network   *Network         `json:"network,omitempty"` // nil: no network but the sandbox's own loopback
	// Mounts are host directories shown at paths outside /workspace (see Mount).
	Mounts []Mount       `json:"mounts,omitempty"`
	TTL    time.Duration `json:"ttl,omitempty"`
	Idle   time.Duration `json:"idle_timeout,omitempty"`
	// IdlePause pauses the environment after this long without an API call (0:
	// the server's default, Config.DefaultIdlePause).
	IdlePause time.Duration `json:"idle_pause,omitempty"`
	// OnTimeout is what the TTL does: OnTimeoutDestroy (the default) or
	// OnTimeoutPause.
	OnTimeout string            `json:"on_timeout,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Layer is where the writable layers (the workspace's and the template
	// root's) live: LayerMemory (the default) or LayerDisk, which a pause can
	// take out of RAM (PauseOptions.ToDisk). Namespace isolation only.
	Layer string `json:"layer,omitempty"`
}

// CreateOptions.Layer values.
const (
	// LayerMemory: a tmpfs of Limits.WorkspaceSize, in RAM, charged to the
	// environment's memory limit.
	LayerMemory = "memory"
	// LayerDisk: an ext4 file system of that size on the host's disk (a
	// sparse file on a loop device); its pages are page cache, charged to the
	// environment while in RAM, written back and dropped by a pause to disk.
	LayerDisk = "disk"
)

// PauseOptions say how Pause pauses.
type PauseOptions struct {
	// ToDisk also takes the environment's writable layers out of RAM (see
	// Manager.Pause); only for an environment created with LayerDisk.
	ToDisk bool `json:"to_disk,omitempty"`
}

// Mount shows a host directory inside an environment.
type Mount struct {
	// Source is an absolute host directory: no "..", no symlink anywhere in it.
	Source string `json:"source,omitempty"`
	// Target is where it appears: an absolute clean path outside /workspace, /tmp,
	// /proc, /dev, /sys and the system directories (/usr, /etc, ...), e.g.
	// /opt/cache.
	Target string `json:"target"`
	// Mode is MountReadOnly (the default), MountReadWrite or MountCopyOnWrite.
	Mode MountMode `json:"mode,omitempty"`
}

// MountMode says what an environment may do to a mounted directory.
type MountMode string

const (
	// MountReadOnly: reads only; writes fail with EROFS.
	MountReadOnly MountMode = "ro"
	// MountReadWrite: writes reach the host directory, as its owner (as root the
	// mount is idmapped so that its owner appears as the sandbox user).
	MountReadWrite MountMode = "rw"
	// MountCopyOnWrite: the host directory is the read-only lower layer of an
	// overlay whose private upper layer takes every write and ends with the
	// environment, as /workspace does: for caches that every environment starts
	// from and none may change for the others.
	MountCopyOnWrite MountMode = "cow"
)

// Info describes an environment.
type Info struct {
	ID        string            `json:"id"`
	Owner     Owner             `json:"owner"`
	Labels    map[string]string `json:"labels,omitempty"`
	Limits    Limits            `json:"limits"`
	Preset    string            `json:"preset,omitempty"`
	Template  string            `json:"template,omitempty"`
	Isolation runner.Isolation  `json:"isolation"`        // namespace or gvisor
	Mounts    []Mount           `json:"mounts,omitempty"` // targets and modes; no host path
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at,omitempty"`
	LastUsed  time.Time         `json:"last_used"`
	State     string            `json:"state"` // running, paused, destroyed
	PausedAt  time.Time         `json:"paused_at,omitempty"`
	OnTimeout string            `json:"on_timeout,omitempty"` // destroy or pause
	Network   *Network          `json:"network,omitempty"`    // the policy in force; nil: no network
	// Snapshot is the snapshot the workspace continues from (Snapshot, Fork);
	// empty: none.
	Snapshot string `json:"snapshot,omitempty"`
	Layer    string `json:"layer"` // memory or disk (CreateOptions.Layer)
	// PausedToDisk: paused with its writable layers out of RAM (PauseOptions.ToDisk).
	PausedToDisk bool `json:"paused_to_disk,omitempty"`
}

// ExecRequest is one command in an environment, under the runner's contract.
type ExecRequest struct {
	Argv    []string      `json:"argv"`
	Env     []string      `json:"env,omitempty"`
	Cwd     string        `json:"cwd,omitempty"`
	Stdin   []byte        `json:"stdin,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	// OutputLimit and OutputTotal as in runner.Limits.
	OutputLimit int64 `json:"output_limit,omitempty"`
	OutputTotal int64 `json:"output_total,omitempty"`
	// TTY runs the command on a terminal of the sandbox's own (runner.Spec.TTY):
	// Stdin and WriteStdin type into it, its output is the stdout stream.
	TTY *runner.TTY `json:"tty,omitempty"`
}

// Event is one piece of a command's life as it happens: output or its end. Seq
// increases by one per event of a process, so a client that reconnects can resume.
type Event struct {
	Seq    int64          `json:"seq"`
	Kind   string         `json:"kind"` // stdout, stderr, exit
	Data   []byte         `json:"data,omitempty"`
	Result *runner.Result `json:"result,omitempty"`
}

// Artifact is a stored output or file, readable only by its owner.
type Artifact struct {
	Ref    string `json:"ref"` // "sha256:<hex>"
	Size   int64  `json:"size"`
	Owner  Owner  `json:"owner"`
	Name   string `json:"name,omitempty"`
	EnvID  string `json:"env_id,omitempty"`
	Source string `json:"source,omitempty"` // e.g. "exec:<id>:stdout", "file:<path>"
}

// The service comes in six parts, as envd cuts its own: a consumer declares the
// ones it calls (the grader runs commands and reads files; it never signals a
// process), and a test double implements only those.

// Lifecycle creates, describes, lists, pauses, resumes, snapshots, forks and
// destroys environments.
type Lifecycle interface {
	Create(ctx context.Context, o CreateOptions) (Info, error)
	Get(ctx context.Context, owner Owner, id string) (Info, error)
	List(ctx context.Context, owner Owner, labels map[string]string) ([]Info, error)
	Pause(ctx context.Context, owner Owner, id string, o PauseOptions) (Info, error)
	Resume(ctx context.Context, owner Owner, id string) (Info, error)
	Destroy(ctx context.Context, owner Owner, id string) error
	// Snapshot and Fork: see Manager.Snapshot and Manager.Fork.
	Snapshot(ctx context.Context, owner Owner, id string) (Snapshot, error)
	Fork(ctx context.Context, owner Owner, id string, o ForkOptions) ([]Info, error)
}

// Processes runs commands in an environment: to their end (Exec), or in the
// background with their output as numbered events, standard input and signals.
type Processes interface {
	Exec(ctx context.Context, owner Owner, id string, r ExecRequest) (*runner.Result, error)
	Start(ctx context.Context, owner Owner, id string, r ExecRequest) (procID string, err error)
	Wait(ctx context.Context, owner Owner, id, procID string) (*runner.Result, error)
	Events(ctx context.Context, owner Owner, id, procID string, after int64) (<-chan Event, error)
	WriteStdin(ctx context.Context, owner Owner, id, procID string, data []byte, eof bool) error
	Signal(ctx context.Context, owner Owner, id, procID string, sig string) error
	// Resize changes the size of a command's terminal (ExecRequest.TTY).
	Resize(ctx context.Context, owner Owner, id, procID string, size runner.TTY) error
}

// Files reads and writes an environment's workspace, one entry or a tar at a time.
type Files interface {
	ReadFile(ctx context.Context, owner Owner, id, path string, offset, length int64) ([]byte, error)
	WriteFile(ctx context.Context, owner Owner, id, path string, data []byte) error
	ListDir(ctx context.Context, owner Owner, id, path string) ([]workspace.Entry, error)
	Stat(ctx context.Context, owner Owner, id, path string) (workspace.Entry, error)
	Remove(ctx context.Context, owner Owner, id, path string) error
	Mkdir(ctx context.Context, owner Owner, id, path string) error
	Download(ctx context.Context, owner Owner, id, path string, w io.Writer) error
	Upload(ctx context.Context, owner Owner, id, path string, r io.Reader) error
}

// Edits change the workspace by patch or exact replacement, and show what changed
// since the environment was created.
type Edits interface {
	ApplyPatch(ctx context.Context, owner Owner, id string, patch []byte) (workspace.PatchReport, error)
	StrReplace(ctx context.Context, owner Owner, id, path, old, new string) error
	Diff(ctx context.Context, owner Owner, id string) ([]byte, error)
}

// Egress is an environment's network, for one created with CreateOptions.Network:
// its policy, changed live, and the connections its proxy made.
type Egress interface {
	SetNetwork(ctx context.Context, owner Owner, id string, n Network) error
	NetworkLog(ctx context.Context, owner Owner, id string, after uint64) ([]egress.Event, error)
	NetworkEvents(ctx context.Context, owner Owner, id string, after uint64) (<-chan egress.Event, error)
}

// Artifacts keep workspace files (and truncated command output) past the
// environment's end, readable by their owner's tenant only.
type Artifacts interface {
	Export(ctx context.Context, owner Owner, id, path string) (Artifact, error)
	ReadArtifact(ctx context.Context, owner Owner, ref string, offset, length int64) ([]byte, Artifact, error)
}

// Service is every operation: what the API serves. Manager implements it.
type Service interface {
	Lifecycle
	Processes
	Files
	Edits
	Egress
	Artifacts
}

// Sentinel errors the edges (api, mcp, tool) map to their codes.
var (
	ErrNotFound  = errors.New("not found")       // also for other tenants' objects: no enumeration
	ErrInvalid   = errors.New("invalid request") // wrapped with what was wrong
	ErrQuota     = errors.New("quota exceeded")
	ErrBusy      = errors.New("busy")
	ErrDestroyed = errors.New("environment destroyed")
	ErrPaused    = errors.New("environment paused") // Exec and Start: resume first
)
