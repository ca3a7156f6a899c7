package client

import "time"

// Owner is who an environment or artifact belongs to. The server sets it from the
// caller's token; a caller cannot choose another tenant.
type Owner struct {
	Tenant string `json:"tenant" jsonschema:"tenant the object belongs to"`
	Task   string `json:"task,omitempty" jsonschema:"task identity recorded at creation"`
}

// Limits bound an environment as a whole; zero means the server's default.
type Limits struct {
	MemoryBytes    int64   `json:"memory_bytes,omitempty" jsonschema:"memory limit of the whole environment in bytes (0: server default)"`
	Pids           int64   `json:"pids,omitempty" jsonschema:"process limit of the environment (0: server default)"`
	CPUs           float64 `json:"cpus,omitempty" jsonschema:"CPU quota in cores, e.g. 0.5 (0: none)"`
	WorkspaceBytes int64   `json:"workspace_bytes,omitempty" jsonschema:"size limit of the private workspace layer in bytes (0: server default)"`
}

// CreateRequest describes a new environment. Exactly one of Workspace and Preset
// is set.
type CreateRequest struct {
	Workspace   string   `json:"workspace,omitempty" jsonschema:"host directory used as the read-only lower layer; must lie under a root the server allows for the tenant"`
	Preset      string   `json:"preset,omitempty" jsonschema:"name of a workspace preset registered on the server"`
	Template    string   `json:"template,omitempty" jsonschema:"template (root file system image) the environment runs on; absent: the host's system directories. template_list lists those the tenant may use"`
	Isolation   string   `json:"isolation,omitempty" jsonschema:"namespace (default) or gvisor: every command under gVisor's user-space kernel (no network, rw mounts or template)"`
	Limits      Limits   `json:"limits,omitzero" jsonschema:"resource limits of the environment"`
	Network     *Network `json:"network,omitempty" jsonschema:"what the environment may reach through its egress proxy; absent: no network but its own loopback"`
	TTLSeconds  float64  `json:"ttl_seconds,omitempty" jsonschema:"lifetime in seconds after which the environment is destroyed (0: server default)"`
	IdleSeconds float64  `json:"idle_timeout_seconds,omitempty" jsonschema:"seconds without a request after which the environment is destroyed (0: server default)"`
	// IdlePauseSeconds and OnTimeout pause instead of destroying (see Client.Pause).
	IdlePauseSeconds float64           `json:"idle_pause_seconds,omitempty" jsonschema:"seconds without a request after which the environment is paused (0: server default)"`
	OnTimeout        string            `json:"on_timeout,omitempty" jsonschema:"what the TTL does: destroy (default) or pause (resume gives a new TTL)"`
	Labels           map[string]string `json:"labels,omitempty" jsonschema:"labels to find the environment by"`
	Task             string            `json:"task,omitempty" jsonschema:"task identity recorded in the owner, unless the token fixes one"`
	Mounts           []Mount           `json:"mounts,omitempty" jsonschema:"host directories shown at paths outside /workspace; each source must lie under a root the server allows for the tenant (mount_roots)"`
	Layer            string            `json:"layer,omitempty" jsonschema:"where the writable layer lives: memory (default, a tmpfs) or disk (a file system on the host's disk, which a pause with to_disk takes out of RAM); namespace isolation only"`
}

// PauseRequest says how to pause an environment.
type PauseRequest struct {
	ToDisk bool `json:"to_disk,omitempty" jsonschema:"also take the writable layer out of RAM: written back to disk and dropped from memory, read back as the processes touch it after resume (an environment created with layer disk only)"`
}

// Mount shows a host directory inside an environment.
type Mount struct {
	Source string `json:"source,omitempty" jsonschema:"absolute host directory, reached through no symlink (never shown back)"`
	Target string `json:"target" jsonschema:"absolute path in the environment, outside /workspace, /tmp, /proc, /dev, /sys, /etc and the system directories"`
	Mode   string `json:"mode,omitempty" jsonschema:"ro (default), rw (writes reach the host) or cow (writes go to a private layer that ends with the environment)"`
}

// Environment describes an environment.
type Environment struct {
	ID        string            `json:"id"`
	Owner     Owner             `json:"owner"`
	Labels    map[string]string `json:"labels,omitempty"`
	Limits    Limits            `json:"limits"`
	Preset    string            `json:"preset,omitempty"`
	Template  string            `json:"template,omitempty"`
	Isolation string            `json:"isolation" jsonschema:"namespace or gvisor"`
	Mounts    []Mount           `json:"mounts,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
	LastUsed  time.Time         `json:"last_used"`
	State     string            `json:"state" jsonschema:"running, paused or destroyed"`
	PausedAt  *time.Time        `json:"paused_at,omitempty"`
	OnTimeout string            `json:"on_timeout,omitempty" jsonschema:"what the TTL does: destroy or pause"`
	Network   *Network          `json:"network,omitempty" jsonschema:"the network policy in force; absent: no network"`
	Snapshot  string            `json:"snapshot,omitempty" jsonschema:"the snapshot its workspace continues from (env snapshot, env fork); absent: none"`
	Layer     string            `json:"layer,omitempty" jsonschema:"where the writable layer lives: memory or disk"`
	// PausedToDisk: paused with its writable layer out of RAM (PauseRequest.ToDisk).
	PausedToDisk bool `json:"paused_to_disk,omitempty" jsonschema:"paused with its writable layer out of RAM"`
}

// Snapshot is an environment's workspace at one moment, read-only, from which
// it and its forks continue.
type Snapshot struct {
	ID        string    `json:"id"`
	EnvID     string    `json:"env_id" jsonschema:"the environment it was taken of"`
	Owner     Owner     `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	Depth     int       `json:"depth" jsonschema:"layers: this snapshot's and those below it"`
	Bytes     int64     `json:"bytes" jsonschema:"what its layer holds, counted against the tenant's snapshot_bytes quota while an environment stands on it"`
}

// ForkRequest asks for Count environments made from a snapshot of one.
type ForkRequest struct {
	Count    int    `json:"count" jsonschema:"how many environments, 1 to 100"`
	Snapshot string `json:"snapshot,omitempty" jsonschema:"one of the environment's snapshots (its snapshot field or one below); absent: a new one, taken now"`
}

// ExecRequest is one command in an environment. The command is executed directly,
// without a shell: pass ["sh", "-c", "..."] for one.
type ExecRequest struct {
	Argv           []string `json:"argv" jsonschema:"program and arguments, executed without a shell"`
	Env            []string `json:"env,omitempty" jsonschema:"variables as KEY=VALUE, added to the minimal environment"`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"working directory relative to the workspace"`
	Stdin          string   `json:"stdin,omitempty" jsonschema:"text fed to standard input (a synchronous exec only)"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds (0: server default)"`
	OutputLimit    int64    `json:"output_limit,omitempty" jsonschema:"bytes of each stream kept in the result, head and tail (0: default)"`
	OutputTotal    int64    `json:"output_total,omitempty" jsonschema:"bytes of output after which the command is killed (0: default)"`
	TTY            bool     `json:"tty,omitempty" jsonschema:"run on a terminal of the sandbox's own: stdin is typed into it and its output is the one stream, stdout"`
	Rows           int      `json:"rows,omitempty" jsonschema:"the terminal's rows with tty (default 24)"`
	Cols           int      `json:"cols,omitempty" jsonschema:"the terminal's columns with tty (default 80)"`
}

// RunRequest is one command in a fresh environment that ends with it: POST
// /v1/run, a create, an exec and a destroy in one round trip.
type RunRequest struct {
	Environment CreateRequest `json:"environment"`
	Exec        ExecRequest   `json:"exec"`
}

// ResizeRequest is a new size for a background command's terminal.
type ResizeRequest struct {
	Rows int `json:"rows" jsonschema:"rows, 1 to 10000"`
	Cols int `json:"cols" jsonschema:"columns, 1 to 10000"`
}

// Result is how a command ended: the `agentbox run --json` contract.
type Result struct {
	ExitCode        int     `json:"exit_code"`
	Signal          *string `json:"signal"`
	TimedOut        bool    `json:"timed_out"`
	Cancelled       bool    `json:"cancelled"`
	OOMKilled       bool    `json:"oom_killed"`
	Limit           string  `json:"limit" jsonschema:"the limit that ended the command: timeout, cpu, memory, pids, output, file_size, or empty"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	StdoutBytes     int64   `json:"stdout_bytes"`
	StderrBytes     int64   `json:"stderr_bytes"`
	StdoutRef       string  `json:"stdout_ref,omitempty" jsonschema:"the artifact holding the whole stdout, when it was truncated"`
	StderrRef       string  `json:"stderr_ref,omitempty" jsonschema:"the artifact holding the whole stderr, when it was truncated"`
	DurationMS      int64   `json:"duration_ms"`
	CPUUserMS       int64   `json:"cpu_user_ms"`
	CPUSysMS        int64   `json:"cpu_sys_ms"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
	Survivors       int     `json:"survivors"`
	Isolation       string  `json:"isolation"`
	LandlockABI     int     `json:"landlock_abi,omitempty"`
	Error           string  `json:"error,omitempty"`
	// Network is every connection of an `agentbox run --allow-host` (an
	// environment's are in its network log instead).
	Network []NetworkEvent `json:"network,omitempty"`
}

// Process names a command started in the background.
type Process struct {
	ID string `json:"id"`
}

// Event is one piece of a background command's life: output or its end. Seq
// increases by one per event of a process and is the SSE event id.
type Event struct {
	Seq    int64   `json:"seq"`
	Kind   string  `json:"kind"` // stdout, stderr, exit
	Data   []byte  `json:"data,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// Event kinds.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventExit   = "exit"
)

// SignalRequest names a signal: "TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2",
// "STOP", "CONT".
type SignalRequest struct {
	Signal string `json:"signal" jsonschema:"TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT"`
}

// FileEntry describes one entry of a workspace without following it.
type FileEntry struct {
	Path       string    `json:"path" jsonschema:"path relative to the workspace root"`
	Name       string    `json:"name"`
	Type       string    `json:"type" jsonschema:"file, dir, symlink or other"`
	Mode       uint32    `json:"mode" jsonschema:"permission bits, e.g. 420 for 0644"`
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"mod_time"`
	Links      uint64    `json:"links,omitempty"`
	LinkTarget string    `json:"link_target,omitempty" jsonschema:"target text of a symlink"`
}

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// PatchRequest carries a unified diff (git or plain) to apply all or nothing.
type PatchRequest struct {
	Patch string `json:"patch" jsonschema:"a unified diff (git or plain); applied all hunks or none, without fuzz"`
}

// PatchReport lists the files a patch changed, in patch order.
type PatchReport struct {
	Files []PatchedFile `json:"files"`
}

// PatchedFile is one file change of an applied patch.
type PatchedFile struct {
	Op      string `json:"op" jsonschema:"add, modify, delete, rename or copy"`
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	Added   int64  `json:"added" jsonschema:"lines added"`
	Deleted int64  `json:"deleted" jsonschema:"lines deleted"`
}

// StrReplaceRequest replaces the one occurrence of Old in the file at Path by New.
type StrReplaceRequest struct {
	Path string `json:"path" jsonschema:"file relative to the workspace root"`
	Old  string `json:"old" jsonschema:"text that must occur exactly once in the file"`
	New  string `json:"new" jsonschema:"replacement text"`
}

// ExportRequest exports the workspace file at Path as an artifact.
type ExportRequest struct {
	Path string `json:"path" jsonschema:"path relative to the workspace root"`
}

// Artifact is a stored output or file, readable only by its owner's tenant.
type Artifact struct {
	Ref    string `json:"ref" jsonschema:"sha256:<hex>"`
	Size   int64  `json:"size"`
	Owner  Owner  `json:"owner"`
	Name   string `json:"name,omitempty"`
	EnvID  string `json:"env_id,omitempty"`
	Source string `json:"source,omitempty" jsonschema:"where it came from, e.g. file:<path>"`
}
